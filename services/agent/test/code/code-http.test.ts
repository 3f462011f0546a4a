import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { pidsWith, uniqueSleep, waitFor } from '../exec/exec-test-kit.js';
import { postCode, runCode } from './code-test-kit.js';
import { SECRETS } from './secret-corpus.js';

const CANARY = 'SBX_CODE_TEST_CANARY';

describe('POST /v1/code', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    // The agent's own environment must never reach a snippet; this stands in for its signing key.
    process.env[CANARY] = 'leaked-canary-value';
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx, { killGraceMs: 300 })] });
  });
  afterAll(async () => {
    delete process.env[CANARY];
    await agent.close();
  });

  it.each([
    [
      'python',
      'import sys\nprint("hi from", "python")\nprint(repr(sys.stdin.read()))',
      "hi from python\n''\n",
    ],
    ['javascript', 'console.log(`hi from ${"javascript"}`, 6 * 7)', 'hi from javascript 42\n'],
    [
      'bash',
      'echo "hi from $((40 + 2))"\ncat\nread -r line || echo "stdin is empty"',
      'hi from 42\nstdin is empty\n',
    ],
  ])('runs %s to exit_status ok', async (language, code, stdout) => {
    const result = await runCode(agent, { language, code });
    expect(result).toMatchObject({ exit_status: 'ok', exit_code: 0, signal: null, stdout, stderr: '' });
    expect(result).toMatchObject({ stdout_bytes: Buffer.byteLength(stdout), stdout_truncated: false });
    expect(result).toMatchObject({ redactions: 0, redactor: 'sbx-redactor/1' });
  });

  it('runs empty code and a snippet far beyond the argv limit (it travels on stdin)', async () => {
    for (const language of ['python', 'javascript', 'bash']) {
      expect(await runCode(agent, { language, code: '' })).toMatchObject({ exit_status: 'ok', stdout: '' });
    }
    const big = `# ${'x'.repeat(600 * 1024)}\nprint("big")\n`;
    expect(await runCode(agent, { language: 'python', code: big })).toMatchObject({ stdout: 'big\n' });
  });

  it.each([
    ['python', 'import sys\nprint("before")\nraise ValueError("boom")', 1, 'ValueError: boom'],
    ['javascript', 'console.error("bad"); process.exit(3)', 3, 'bad'],
    ['bash', 'echo oops >&2; exit 3', 3, 'oops'],
  ])('answers exit_status error for %s failing', async (language, code, exitCode, stderr) => {
    const result = await runCode(agent, { language, code });
    expect(result).toMatchObject({ exit_status: 'error', exit_code: exitCode, signal: null });
    expect(result.stderr).toContain(stderr);
  });

  it('answers exit_status timeout and kills the whole process group, a background child too', async () => {
    const marker = uniqueSleep();
    const code = `import subprocess, time\nsubprocess.Popen(["sleep", "${marker}"])\nprint("started", flush=True)\nwhile True:\n    time.sleep(0.05)\n`;
    const result = await runCode(agent, { language: 'python', code, timeout_ms: 500 });
    expect(result).toMatchObject({ exit_status: 'timeout', exit_code: null, stdout: 'started\n' });
    expect(result.duration_ms).toBeGreaterThanOrEqual(500);
    expect(await waitFor(() => pidsWith(marker).length === 0, 3000, 'the group to be gone')).toBe(true);
  });

  it('redacts a secret the program writes in two flushed halves, on both streams', async () => {
    const secret = SECRETS.find((candidate) => candidate.kind === 'sk_key')?.secret ?? '';
    const half = Math.floor(secret.length / 2);
    const code = [
      'import os, sys',
      `a, b = ${JSON.stringify(secret.slice(0, half))}, ${JSON.stringify(secret.slice(half))}`,
      'sys.stdout.write("key=" + a); sys.stdout.flush(); sys.stdout.write(b + "\\n"); sys.stdout.flush()',
      'os.write(2, ("err " + a).encode()); os.write(2, (b + " end").encode())',
    ].join('\n');
    const result = await runCode(agent, { language: 'python', code });
    expect(result).toMatchObject({ exit_status: 'ok', redactions: 2 });
    expect(result.stdout).toBe('key=[REDACTED:sk_key]\n');
    expect(result.stderr).toBe('err [REDACTED:sk_key] end');
    expect(result.stdout_bytes).toBe(Buffer.byteLength(result.stdout));
  });

  it('keeps the first 256 KiB of stdout and counts every byte', async () => {
    const code = 'import sys\nsys.stdout.write("é" * 150000 + "\\n")\nsys.stderr.write("e" * 40000)';
    const result = await runCode(agent, { language: 'python', code });
    expect(result).toMatchObject({ exit_status: 'ok', stdout_truncated: true, stderr_truncated: true });
    expect(result).toMatchObject({ stdout_bytes: 300_001, stderr_bytes: 40_000 });
    expect(result.stdout).toBe('é'.repeat(128 * 1024));
    expect(result.stderr).toBe('e'.repeat(32 * 1024));
  });

  it("gives the code PATH and HOME but nothing of the agent's environment", async () => {
    expect(process.env[CANARY]).toBe('leaked-canary-value');
    const python = await runCode(agent, {
      language: 'python',
      code: 'import os, json\nprint(json.dumps(dict(os.environ)))',
    });
    const variables = JSON.parse(python.stdout) as Record<string, string>;
    expect(Object.keys(variables).toSorted()).toEqual([
      'HOME',
      'LANG',
      'PATH',
      'PWD', // exported by the /bin/sh that sets the memory limit: the working directory
      'PYTHONDONTWRITEBYTECODE',
      'PYTHONUNBUFFERED',
      'TMPDIR',
    ]);
    expect(variables).toMatchObject({
      HOME: agent.sandboxWorkspace,
      PWD: agent.sandboxWorkspace,
      TMPDIR: '/tmp',
    });
    expect(variables['PATH']).toContain('/usr/bin');
    for (const [language, code] of [
      ['javascript', `console.log(process.env.${CANARY} ?? "absent", process.env.PATH ? "path" : "no path")`],
      ['bash', `echo "\${${CANARY}:-absent} \${PATH:+path}"; env | grep -c leaked-canary || true`],
    ] as const) {
      const result = await runCode(agent, { language, code });
      expect(result.stdout.split('\n')[0]).toBe('absent path');
      expect(result.stdout).not.toContain('leaked-canary-value');
    }
  });

  it('refuses a token without the process scope and a caller without a token', async () => {
    const body = { language: 'python', code: 'print(1)' };
    const denied = await postCode(agent, body, agent.token(['fs:rw', 'shell']));
    expect(denied.status).toBe(403);
    expect(denied.body['error']).toMatchObject({ retryable: false });
    const anonymous = await postCode(agent, body, '');
    expect(anonymous.status).toBe(401);
  });

  it.each([
    ['an unknown language', { language: 'ruby', code: 'puts 1' }],
    ['missing code', { language: 'python' }],
    ['timeout 0', { language: 'python', code: '', timeout_ms: 0 }],
    ['a timeout over an hour', { language: 'python', code: '', timeout_ms: 3_600_001 }],
    ['a memory limit under 32 MB', { language: 'python', code: '', memory_limit_mb: 16 }],
    ['a fractional memory limit', { language: 'python', code: '', memory_limit_mb: 64.5 }],
    ['an unknown key', { language: 'python', code: '', cwd: '/' }],
    ['not an object', ['python', 'print(1)']],
  ])('refuses %s with 400 in the error envelope', async (_name, body) => {
    const response = await postCode(agent, body);
    expect(response.status).toBe(400);
    expect(response.body['error']).toMatchObject({ code: 'BAD_REQUEST', retryable: false });
  });
});
