import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { runCode } from './code-test-kit.js';

const EATERS = [
  ['python', 'chunks = []\nwhile True:\n    chunks.append(bytearray(1024 * 1024))\n', /MemoryError/],
  [
    'javascript',
    'const a = [];\nfor (;;) a.push(new Array(100000).fill(Math.random()));\n',
    /heap out of memory/,
  ],
  ['bash', 'x=0123456789abcdef\nwhile true; do x="$x$x"; done\n', /cannot allocate/],
] as const;

describe('POST /v1/code under a memory limit', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx, { killGraceMs: 300 })] });
  });
  afterAll(async () => agent.close());

  it.each(EATERS)(
    'answers exit_status oom for %s allocating without end, and keeps serving',
    async (language, code, stderr) => {
      const result = await runCode(agent, { language, code, memory_limit_mb: 64, timeout_ms: 60_000 });
      expect(result.exit_status).toBe('oom');
      expect(result.stderr).toMatch(stderr);
      const after = await runCode(agent, {
        language,
        code:
          language === 'bash'
            ? 'echo alive'
            : language === 'python'
              ? 'print("alive")'
              : 'console.log("alive")',
      });
      expect(after).toMatchObject({ exit_status: 'ok', stdout: 'alive\n' });
    },
  );

  it('recognises an allocation failure even when stderr was truncated long before it', async () => {
    const code = 'import sys\nsys.stderr.write("noise " * 20000 + "\\n")\nx = bytearray(1 << 40)\n';
    const result = await runCode(agent, { language: 'python', code, memory_limit_mb: 64 });
    expect(result).toMatchObject({ exit_status: 'oom', exit_code: 1, stderr_truncated: true });
    expect(result.stderr).not.toContain('MemoryError');
  });

  it('lets a program use memory under its limit', async () => {
    const python = 'x = bytearray(100 * 1024 * 1024)\nprint(len(x) // (1024 * 1024))';
    expect(await runCode(agent, { language: 'python', code: python, memory_limit_mb: 256 })).toMatchObject({
      exit_status: 'ok',
      stdout: '100\n',
    });
    const javascript = 'const b = Buffer.alloc(100 * 1024 * 1024, 1); console.log(b.length >> 20)';
    expect(
      await runCode(agent, { language: 'javascript', code: javascript, memory_limit_mb: 256 }),
    ).toMatchObject({
      exit_status: 'ok',
      stdout: '100\n',
    });
  });
});
