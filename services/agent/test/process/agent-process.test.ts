import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { WebSocket } from 'ws';
import { TEST_SANDBOX_UID } from '../support/agent-harness.js';
import { agentListening } from '../support/agent-listening.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const runsAsRoot = process.getuid?.() === 0;

/** The environment operators configure the agent with, and nothing else. */
function agentEnvironment(key: SigningKey, workspace: string): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    SANDBOX_ID: 'sb_proc',
    SANDBOX_SIGNING_KEY: key.toBase64url(),
    SANDBOX_TOKEN_ISSUER: 'sbx-broker',
    WORKSPACE_ROOT: workspace,
    HOST: '127.0.0.1',
    PORT: '0',
  };
}

/** The agent as operators run it: its entry point as a process, configured by the environment only. */
describe('agent process', () => {
  const key = SigningKey.generate();
  const workspace = mkdtempSync(path.join(tmpdir(), 'sbx-agent-proc-'));
  let child: ChildProcess;
  let url = '';
  const stdout: string[] = [];

  beforeAll(async () => {
    // The agent refuses root: started by a root test run, it runs as the sandbox's user.
    if (runsAsRoot) chownSync(workspace, TEST_SANDBOX_UID, TEST_SANDBOX_UID);
    child = spawn(`${root}node_modules/.bin/tsx`, ['services/agent/src/main.ts'], {
      cwd: root,
      env: agentEnvironment(key, workspace),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(runsAsRoot ? { uid: TEST_SANDBOX_UID, gid: TEST_SANDBOX_UID } : {}),
    });
    url = await agentListening(child, stdout);
  });

  afterAll(() => {
    child.kill('SIGKILL');
    rmSync(workspace, { recursive: true, force: true });
  });

  const token = (scopes: string[]): string =>
    mintCapabilityToken({
      key,
      issuer: 'sbx-broker',
      subject: 'usr_1',
      sandboxId: 'sb_proc',
      scopes,
      ttlSeconds: 300,
    }).token;

  it('logs the bound address and answers /healthz: liveness to anyone, its sandbox to a token', async () => {
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    const headers = { authorization: `Bearer ${token(['shell:ro'])}` };
    const health = (await (await fetch(`${url}/healthz`, { headers })).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ status: 'ok', sandbox_id: 'sb_proc', shells: 0, processes: 0 });
  });

  it('writes and reads a file and runs a command with one token', async () => {
    const auth = { authorization: `Bearer ${token(['fs:rw', 'process'])}` };
    const put = await fetch(`${url}/files/hello.txt`, {
      method: 'PUT',
      headers: auth,
      body: 'hi from a test',
    });
    expect(put.status).toBe(201);
    expect(readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hi from a test');
    expect(await (await fetch(`${url}/files/hello.txt`, { headers: auth })).text()).toBe('hi from a test');
    const exec = await fetch(`${url}/v1/exec`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: 'cat hello.txt | wc -c' }),
    });
    expect(((await exec.json()) as { stdout: string }).stdout.trim()).toBe('14');
  });

  it('opens a shell over the WebSocket and runs a command in it', async () => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/shell/ws`);
    const frames: Array<Record<string, unknown>> = [];
    ws.on('message', (data: Buffer) =>
      frames.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>),
    );
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ type: 'auth', token: token(['shell']) }));
    ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
    ws.send(JSON.stringify({ type: 'stdin', data: 'echo $((6*7))-marker\n' }));
    const output = (): string =>
      frames
        .filter((f) => f['type'] === 'stdout')
        .map((f) =>
          f['encoding'] === 'base64'
            ? Buffer.from(String(f['data']), 'base64').toString()
            : String(f['data']),
        )
        .join('');
    for (let i = 0; i < 100 && !output().includes('42-marker'); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(output()).toContain('42-marker');
    expect(frames[0]).toMatchObject({ type: 'auth_ok' });
    ws.close();
  });

  it('stops cleanly on SIGTERM and never logged the token', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout.join('\n')).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });
});

/** Only a root test run can start the agent as root. */
const asRoot = runsAsRoot ? describe : describe.skip;

asRoot('agent process started as root', () => {
  it('refuses to start: it says why on stderr and exits non-zero, listening on nothing', async () => {
    const workspace = mkdtempSync(path.join(tmpdir(), 'sbx-agent-root-'));
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'services/agent/src/main.ts'], {
        cwd: root,
        env: agentEnvironment(SigningKey.generate(), workspace),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const output = { stdout: '', stderr: '' };
      child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      expect(output.stderr).toContain(
        "the agent must not run as root: start it as the sandbox's unprivileged user (docs/security.md)",
      );
      expect(output.stdout).not.toContain('agent listening');
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });
});
