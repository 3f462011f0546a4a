import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { TEST_SANDBOX_UID } from '../support/agent-harness.js';
import { agentListening } from '../support/agent-listening.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const runsAsRoot = process.getuid?.() === 0;

/**
 * The agent started as a supervisor or CI runner might start it: with a descriptor left open
 * across exec. Nothing it inherited may reach user code, through any launcher.
 */
describe.each(['direct', 'bubblewrap'])('agent process started with a stray descriptor (%s)', (launcher) => {
  const key = SigningKey.generate();
  const workspace = mkdtempSync(path.join(tmpdir(), 'sbx-agent-fds-'));
  let child: ChildProcess;
  let url = '';

  beforeAll(async () => {
    if (runsAsRoot) chownSync(workspace, TEST_SANDBOX_UID, TEST_SANDBOX_UID);
    // Node itself (tsx as a loader), not the tsx CLI, which would start the agent as a grandchild.
    child = spawn(process.execPath, ['--import', 'tsx', 'services/agent/src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        SANDBOX_ID: 'sb_fds',
        SANDBOX_SIGNING_KEY: key.toBase64url(),
        WORKSPACE_ROOT: workspace,
        HOST: '127.0.0.1',
        PORT: '0',
        AGENT_LAUNCHER: launcher,
        AGENT_NETWORK: 'false',
      },
      // fd 20, a pipe the child inherits without close-on-exec (Node itself only marks fds 0-15).
      stdio: ['ignore', 'pipe', 'pipe', ...Array<'ignore'>(17).fill('ignore'), 'pipe'],
      // The agent refuses root: started by a root test run, it runs as the sandbox's user.
      ...(runsAsRoot ? { uid: TEST_SANDBOX_UID, gid: TEST_SANDBOX_UID } : {}),
    });
    url = await agentListening(child);
  });

  afterAll(() => {
    child.kill('SIGKILL');
    rmSync(workspace, { recursive: true, force: true });
  });

  it('hands user processes nothing but stdin, stdout and stderr', async () => {
    const token = mintCapabilityToken({
      key,
      issuer: 'sbx-broker',
      subject: 'usr_1',
      sandboxId: 'sb_fds',
      scopes: ['process'],
      ttlSeconds: 300,
    }).token;
    const response = await fetch(`${url}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      // The shell's own descriptors, listed by a child (no pipe: the shell would hold its ends).
      body: JSON.stringify({ cmd: 'ls /proc/$$/fd' }),
    });
    const result = (await response.json()) as { exit_code: number; stdout: string; stderr: string };
    expect(result).toMatchObject({ exit_code: 0, stdout: '0\n1\n2\n' });
  });
});
