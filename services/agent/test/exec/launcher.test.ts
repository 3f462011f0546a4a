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
      // HOME is the workspace as the sandbox sees it: bound at its own path for an agent started alone.
      expect(agent.sandboxWorkspace).toBe(agent.workspace);
      const variables = result.stdout.split('\n').filter((line) => line !== '');
      expect(variables.map((line) => line.slice(0, line.indexOf('='))).toSorted()).toEqual([
        'HOME',
        'LANG',
        'PATH',
      ]);
      expect(variables).toContain(`HOME=${agent.sandboxWorkspace}`);
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

// A split agent (agent-identity.ts) has the user's effective ids and hands them to user processes
// as real ones through setpriv; run here by the root test process, which setpriv obeys the same way.
// agent-split-identity.test.ts starts a real split agent.
asRoot('direct launcher handing user processes the user’s ids', () => {
  const NOBODY = 65534;
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx, { killGraceMs: 300 }), shellsFeature(ctx)],
      launcher: () => directLauncher({ user: { uid: NOBODY, gid: NOBODY } }),
    });
    // The unprivileged user needs to enter the (root-owned, 0700) test workspace.
    chmodSync(agent.workspace, 0o777);
    writeFileSync(path.join(agent.workspace, 'root-only'), 'secret', { mode: 0o600 });
  });
  afterAll(async () => agent.close());

  it('runs user processes with the user’s real and effective ids', async () => {
    const result = await execOk(agent, { cmd: 'id -ru; id -u; id -rg; id -g' });
    expect(result.stdout.split('\n').slice(0, 4)).toEqual([NOBODY, NOBODY, NOBODY, NOBODY].map(String));
    const denied = await execOk(agent, { argv: ['cat', 'root-only'] });
    expect(denied.exit_code).not.toBe(0);
    expect(denied.stderr).toContain('Permission denied');
  });

  it('runs shells with the user’s ids', async () => {
    const shell = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, agent.token(['shell']));
    shell.type('echo "ID $(id -ru) $(id -u) $(id -g)"');
    expect(await shell.waitFor(/^ID \d+ \d+ \d+$/m)).toMatch(
      new RegExp(`^ID ${NOBODY} ${NOBODY} ${NOBODY}$`, 'm'),
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
