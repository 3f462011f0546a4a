import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { directLauncher } from '../../src/adapters/launcher.js';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { ShellClient } from '../shells/shell-client.js';
import { ExecResponse } from '@sbx/protocol';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { call, pidsWith, uniqueSleep, waitFor } from './exec-test-kit.js';

/** A TCP port on the host's loopback that accepts connections (outside any sandbox). */
async function listenOnHost(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.end('hello from the host\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port };
}

/** A one-line program that connects to 127.0.0.1:port and prints what it reads, or fails. */
function connectProgram(port: number): string[] {
  const code = `require('net').connect(${port}, '127.0.0.1').on('data', (d) => { process.stdout.write(d); process.exit(0); }).on('error', (e) => { console.error(e.code); process.exit(7); });`;
  return [process.execPath, '-e', code];
}

async function execOk(agent: TestAgent, body: unknown) {
  const response = await call(agent, agent.token(['process']), 'POST', '/v1/exec', body);
  expect(response.status).toBe(200);
  return ExecResponse.parse(response.body);
}

describe('bubblewrap launcher', () => {
  let agent: TestAgent;
  let direct: TestAgent;
  let host: { server: Server; port: number };

  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx, { killGraceMs: 300 })],
      confined: { network: false },
    });
    direct = await startTestAgent({ features: (ctx) => [execFeature(ctx)] });
    host = await listenOnHost();
  });
  afterAll(async () => {
    await agent.close();
    await direct.close();
    await new Promise((resolve) => host.server.close(resolve));
  });

  it('lets the process write in the workspace, and only there', async () => {
    const wrote = await execOk(agent, { cmd: 'echo made-inside > note.txt && cat note.txt', cwd: '.' });
    expect(wrote).toMatchObject({ exit_code: 0, stdout: 'made-inside\n' });
    expect(readFileSync(path.join(agent.workspace, 'note.txt'), 'utf8')).toBe('made-inside\n');
    for (const target of ['/etc/sbx-escape', '/usr/sbx-escape', '/root/sbx-escape']) {
      const refused = await execOk(agent, { argv: ['touch', target] });
      expect([target, refused.exit_code]).toEqual([target, 1]);
      // /root is not even the sandbox user's to enter; the rest is mounted read-only.
      expect(refused.stderr).toMatch(/Read-only file system|Permission denied/);
    }
    // /tmp is the sandbox's own: writable, and never the host's.
    const scratch = `/tmp/${path.basename(agent.workspace)}-scratch`;
    expect((await execOk(agent, { argv: ['touch', scratch] })).exit_code).toBe(0);
    expect(existsSync(scratch)).toBe(false);
  });

  it("runs the process in the sandbox's own pid namespace, where the host's processes are invisible", async () => {
    const result = await execOk(agent, { cmd: 'echo $$; ls /proc | grep -c "^[0-9]"' });
    const [pid = '', visible = ''] = result.stdout.trim().split('\n');
    expect(Number(pid)).toBeLessThan(100);
    expect(Number(visible)).toBeLessThan(10);
  });

  it('has no network: the host port the direct launcher reaches is unreachable', async () => {
    const reached = await execOk(direct, { argv: connectProgram(host.port) });
    expect(reached).toMatchObject({ exit_code: 0, stdout: 'hello from the host\n' });
    const confined = await execOk(agent, { argv: connectProgram(host.port) });
    expect(confined.exit_code).toBe(7);
    expect(confined.stdout).toBe('');
  });

  it('does not leak the agent environment into the sandbox', async () => {
    process.env['SBX_BWRAP_CANARY'] = 'leaked';
    try {
      const result = await execOk(agent, { argv: ['env'] });
      expect(result.stdout).not.toContain('SBX_BWRAP_CANARY');
      // HOME is the workspace as the sandbox sees it, never the agent's host path.
      expect(agent.sandboxWorkspace).toBe('/workspace');
      expect(result.stdout.split('\n')).toContain(`HOME=${agent.sandboxWorkspace}`);
      expect(result.stdout).not.toContain(agent.workspace);
      const unconfined = await execOk(direct, { argv: ['env'] });
      expect(unconfined.stdout.split('\n')).toContain(`HOME=${direct.sandboxWorkspace}`);
    } finally {
      delete process.env['SBX_BWRAP_CANARY'];
    }
  });

  it('kills everything in the sandbox on timeout', async () => {
    const marker = uniqueSleep();
    const result = await execOk(agent, { cmd: `sleep ${marker} & sleep ${marker}`, timeout_ms: 300 });
    expect(result.timed_out).toBe(true);
    expect(await waitFor(() => pidsWith(marker).length === 0, 3000, 'the sandboxed sleeps to die')).toBe(
      true,
    );
  });

  it('kills everything in the sandbox when the exec socket closes', async () => {
    const marker = uniqueSleep();
    const socket = await TestSocket.authed(`${agent.wsUrl}/v1/exec/ws`, agent.token(['process']));
    socket.send({ type: 'start', cmd: `sleep ${marker} & sleep ${marker}` });
    await waitFor(() => pidsWith(`sleep ${marker}`, 'exact').length === 2, 3000, 'the sleeps to start');
    socket.close();
    expect(await waitFor(() => pidsWith(marker).length === 0, 3000, 'the sandboxed sleeps to die')).toBe(
      true,
    );
  });
});

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

asRoot('direct launcher with runAs (agent running as root)', () => {
  const NOBODY = 65534;
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx, { killGraceMs: 300 }), shellsFeature(ctx)],
      launcher: () => directLauncher({ runAs: { uid: NOBODY, gid: NOBODY } }),
    });
    // The unprivileged user needs to enter the (root-owned, 0700) test workspace.
    chmodSync(agent.workspace, 0o777);
    writeFileSync(path.join(agent.workspace, 'root-only'), 'secret', { mode: 0o600 });
  });
  afterAll(async () => agent.close());

  it('runs user processes as the configured uid and gid, without supplementary groups', async () => {
    const result = await execOk(agent, { cmd: 'id -u; id -g; grep ^Groups: /proc/self/status' });
    expect(result.stdout.split('\n').slice(0, 2)).toEqual([String(NOBODY), String(NOBODY)]);
    expect(result.stdout).toMatch(/Groups:\s*\n/);
    const denied = await execOk(agent, { argv: ['cat', 'root-only'] });
    expect(denied.exit_code).not.toBe(0);
    expect(denied.stderr).toContain('Permission denied');
  });

  it('runs shells as the configured uid and gid, without supplementary groups', async () => {
    // Root in a container image commonly holds some (e.g. disk, adm); none may reach the shell.
    process.setgroups?.([0, 4, 6]);
    const shell = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, agent.token(['shell']));
    shell.type('echo "ID $(id -u) $(id -g) [$(id -G)]"');
    expect(await shell.waitFor(/^ID \d+ \d+ \[.*\]$/m)).toMatch(
      new RegExp(`^ID ${NOBODY} ${NOBODY} \\[${NOBODY}\\]$`, 'm'),
    );
    shell.send({ type: 'close' });
  });

  it('still kills the unprivileged process group on timeout', async () => {
    const marker = uniqueSleep();
    const result = await execOk(agent, { cmd: `sleep ${marker} & sleep ${marker}`, timeout_ms: 300 });
    expect(result).toMatchObject({ timed_out: true, signal: 'SIGTERM' });
    expect(pidsWith(marker)).toEqual([]);
  });
});
