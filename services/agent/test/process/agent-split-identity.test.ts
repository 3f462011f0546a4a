// The agent as the container images start it (docs/provider-docker.md, D22): started by root
// with only CAP_SETUID and CAP_SETGID, setpriv gives it its own real ids and the user's as its
// effective ones. Attacked from user code (uid `user`), which shares the agent's pid
// namespace as it does in a container: the key, the agent's environment and its memory stay
// out of reach, while the agent still reads its key, its rotation and its revocation list.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { agentListening } from '../support/agent-listening.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;
const agentId = 270_000 + randomInt(10_000);
const userId = agentId + 1;

interface Exec {
  readonly exit_code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

asRoot('a split agent (real ids its own, effective ids the user’s), attacked from user code', () => {
  const dir = mkdtempSync('/var/tmp/sbx-split-');
  const run = path.join(dir, 'run');
  const workspace = path.join(dir, 'workspace');
  let key = SigningKey.generate();
  let child: ChildProcess;
  let url = '';

  /** Written as the provider does: root-owned, readable by the agent's group only. */
  function writeOwn(name: string, text: string): void {
    const scratch = path.join(run, `.${name}.tmp`);
    writeFileSync(scratch, text, { mode: 0o440 });
    chownSync(scratch, 0, agentId);
    chmodSync(scratch, 0o440);
    renameSync(scratch, path.join(run, name));
  }

  const token = (scopes: string[], signWith = key): string =>
    mintCapabilityToken({
      key: signWith,
      issuer: 'sbx-broker',
      subject: 'usr_split',
      sandboxId: 'sb_split',
      scopes,
      ttlSeconds: 300,
    }).token;

  async function exec(cmd: string, signWith = key): Promise<Exec> {
    const response = await fetch(`${url}/v1/exec`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token(['process'], signWith)}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ cmd }),
    });
    if (response.status !== 200)
      throw new Error(`exec answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as Exec;
  }

  beforeAll(async () => {
    chmodSync(dir, 0o755);
    mkdirSync(run, { mode: 0o755 });
    mkdirSync(workspace, { mode: 0o700 });
    chownSync(workspace, userId, userId);
    writeOwn('agent.key', key.toBase64url());
    child = spawn(
      '/usr/bin/setpriv',
      [
        '--ruid',
        String(agentId),
        '--euid',
        String(userId),
        '--rgid',
        String(agentId),
        '--egid',
        String(userId),
        '--clear-groups',
        '--',
        process.execPath,
        '--import',
        'tsx',
        'services/agent/src/main.ts',
      ],
      {
        cwd: root,
        env: {
          PATH: '/usr/bin:/bin',
          SANDBOX_ID: 'sb_split',
          SANDBOX_SIGNING_KEY_FILE: path.join(run, 'agent.key'),
          AGENT_SANDBOX_ENV_FILE: path.join(run, 'sandbox-env.json'),
          SBX_SPLIT_CANARY: 'agent-environment-secret',
          WORKSPACE_ROOT: workspace,
          HOST: '127.0.0.1',
          PORT: '0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    url = await agentListening(child);
  }, 60_000);

  afterAll(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs user code as the user, real ids included, with nothing of the agent’s', async () => {
    const ids = await exec('id -ru; id -u; id -rg; id -g; id -G; grep -E "^Cap(Prm|Eff):" /proc/self/status');
    expect(ids.stdout.split('\n').slice(0, 5)).toEqual([
      `${userId}`,
      `${userId}`,
      `${userId}`,
      `${userId}`,
      `${userId}`,
    ]);
    expect(ids.stdout).toMatch(/^CapEff:\s+0+$/m);
  });

  it("cannot read the agent's key, its environment or its memory, nor trace it", async () => {
    const pid = String(child.pid);
    const attack = await exec(
      [
        `cat ${run}/agent.key; echo "key=$?"`,
        `cat /proc/${pid}/environ; echo "environ=$?"`,
        `python3 -c "open('/proc/${pid}/mem', 'rb')" 2>/dev/null; echo "mem=$?"`,
        `python3 -c "import ctypes; print('attach', ctypes.CDLL(None).ptrace(16, ${pid}, 0, 0))"`,
      ].join('\n'),
    );
    expect(attack.stdout).not.toContain(key.toBase64url());
    expect(attack.stdout).not.toContain('agent-environment-secret');
    for (const name of ['key', 'environ', 'mem'])
      expect(attack.stdout).toMatch(new RegExp(`^${name}=[1-9]`, 'm'));
    expect(attack.stdout).toContain('attach -1');
    // Nor through the file API, which works as the user.
    const response = await fetch(`${url}/v1/files/download?path=${encodeURIComponent(`${run}/agent.key`)}`, {
      headers: { authorization: `Bearer ${token(['fs:ro'])}` },
    });
    expect(response.status).toBe(403);
  });

  it('still reads its own files: a rotated key and the revocation list take effect', async () => {
    const previous = key;
    key = SigningKey.generate();
    writeOwn('agent.key', key.toBase64url());
    // The agent looks at its key file at most once a second.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const answer = await exec('echo rotated').catch((err: unknown) => String(err));
      if (typeof answer !== 'string') break;
      if (Date.now() > deadline) throw new Error(`the rotated key was never accepted: ${answer}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await exec('echo old', previous)).stdout).toBe('old\n'); // the previous key's grace
    writeOwn(
      'revocations.json',
      JSON.stringify({ version: 1, not_before: Math.floor(Date.now() / 1000) + 5, jtis: {} }),
    );
    const revoked = Date.now() + 30_000;
    for (;;) {
      const answer = await exec('echo still').catch((err: unknown) => String(err));
      if (typeof answer === 'string' && answer.includes('401')) break;
      if (Date.now() > revoked) throw new Error('the revocation list was never applied');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
});
