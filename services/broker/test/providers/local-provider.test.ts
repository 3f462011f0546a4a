import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { LocalProvider } from '../../src/providers/local-provider.js';
import { contractSpec } from './provider-contract.js';
import {
  agentPidsOf,
  cmdlineOf,
  environOf,
  isAlive,
  processesWorkingIn,
  startLocalKit,
  tokenFor,
  type LocalKit,
} from './local-provider-kit.js';

let kit: LocalKit;
let provider: LocalProvider;

beforeAll(async () => {
  kit = await startLocalKit({ isolation: 'bubblewrap' });
  provider = kit.provider;
});

afterAll(async () => {
  await kit.dispose();
});

const workspaceOf = (sandboxId: string): string => path.join(kit.dataDir, 'workspaces', sandboxId);
const stateDirOf = (sandboxId: string): string => path.join(kit.dataDir, 'sandboxes', sandboxId);

describe('local provider: a healthy agent per sandbox', () => {
  it('answers /healthz with its own sandbox id and the bubblewrap launcher', async () => {
    expect(provider.isolation).toBe('bubblewrap');
    const spec = contractSpec();
    const { dataplane } = await provider.create(spec);
    expect(new URL(dataplane.httpBaseUrl).hostname).toBe('127.0.0.1');
    // The agent names its sandbox only to a holder of one of its tokens.
    const headers = { authorization: `Bearer ${tokenFor(spec, ['shell:ro'])}` };
    const response = await fetch(`${dataplane.httpBaseUrl}/healthz`, { headers });
    expect(response.status).toBe(200);
    const health = (await response.json()) as Record<string, unknown>;
    expect(health['sandbox_id']).toBe(spec.sandboxId);
    expect(health['launcher']).toBe('bubblewrap');
    await provider.destroy(spec.sandboxId);
  });

  it("accepts a token minted with the sandbox's key and refuses one for another sandbox", async () => {
    const [a, b] = [contractSpec(), contractSpec()];
    const [ra, rb] = await Promise.all([provider.create(a), provider.create(b)]);
    expect(new URL(ra.dataplane.httpBaseUrl).port).not.toBe(new URL(rb.dataplane.httpBaseUrl).port);
    const probe = (base: string, token?: string): Promise<Response> =>
      fetch(
        `${base}/v1/files?path=/`,
        token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
      );

    expect((await probe(ra.dataplane.httpBaseUrl)).status).toBe(401);
    // Past authentication: whatever the route answers, it is not 401.
    expect((await probe(ra.dataplane.httpBaseUrl, tokenFor(a))).status).not.toBe(401);
    expect((await probe(rb.dataplane.httpBaseUrl, tokenFor(a))).status).toBe(401);
    // Right audience, wrong key: B's agent holds B's key only.
    const forged = tokenFor({ ...b, signingKey: a.signingKey });
    expect((await probe(rb.dataplane.httpBaseUrl, forged)).status).toBe(401);
    const keyA = readFileSync(path.join(stateDirOf(a.sandboxId), 'agent.key'), 'utf8');
    const keyB = readFileSync(path.join(stateDirOf(b.sandboxId), 'agent.key'), 'utf8');
    expect(keyA).not.toBe(keyB);
    await Promise.all([provider.destroy(a.sandboxId), provider.destroy(b.sandboxId)]);
  });
});

describe('local provider: the key reaches the agent through a descriptor only', () => {
  it("keeps the key 0640 to the sandbox user's group, never in argv, env, the log or the agent's view", async () => {
    const spec = contractSpec({ network: 'off' });
    await provider.create(spec);
    const key = spec.signingKey.toBase64url();
    const stateDir = stateDirOf(spec.sandboxId);
    const keyFile = path.join(stateDir, 'agent.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o640);
    expect(statSync(stateDir).mode & 0o777).toBe(0o750);
    expect(readFileSync(keyFile, 'utf8')).toBe(key);

    const [pid] = agentPidsOf(spec.sandboxId);
    expect(pid).toBeDefined();
    const env = environOf(pid!);
    expect(cmdlineOf(pid!)).not.toContain(key);
    expect(env.join('\n')).not.toContain(key);
    expect(env).toContain('AGENT_STATE_FD=3');
    expect(env.join('\n')).not.toContain(stateDir);
    // The agent lives in the sandbox's view: no path there leads to the data directory's contents.
    expect(existsSync(`/proc/${pid!}/root${keyFile}`)).toBe(false);
    expect(existsSync(`/proc/${pid!}/root/workspace`)).toBe(true);
    expect(env).toContain('AGENT_LAUNCHER=bubblewrap');
    expect(env).toContain('AGENT_SHARED_VIEW=true');
    expect(env).toContain('AGENT_NETWORK=false');
    // The agent is the sandbox's own user (the broker's, when the broker is not root), and reads
    // the key through that user's group.
    const root = process.getuid?.() === 0;
    const { hostUid } = JSON.parse(readFileSync(path.join(stateDir, 'sandbox.json'), 'utf8')) as {
      hostUid?: number;
    };
    const user = root ? hostUid : process.getuid?.();
    expect(statSync(keyFile).gid).toBe(root ? hostUid : process.getgid?.());
    expect(/^Uid:\s+(\d+)\s+(\d+)/m.exec(readFileSync(`/proc/${pid!}/status`, 'utf8'))?.slice(1)).toEqual([
      String(user),
      String(user),
    ]);
    // Nothing of the broker's own environment is passed on.
    expect(env.some((v) => v.startsWith('NODE_OPTIONS=') || v.startsWith('PATH='))).toBe(false);

    expect(kit.logs.join('')).not.toContain(key);
    await provider.destroy(spec.sandboxId);
  });

  it("drains the agent's output into the broker log, tagged with the sandbox id", async () => {
    const spec = contractSpec();
    await provider.create(spec);
    const lines = kit.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    const fromAgent = lines.filter(
      (line) => line['sandbox_id'] === spec.sandboxId && line['msg'] === 'agent output',
    );
    expect(fromAgent.length).toBeGreaterThan(0);
    expect(fromAgent.every((line) => line['level'] === 20)).toBe(true);
    await provider.destroy(spec.sandboxId);
  });
});

describe('local provider: workspaces and processes', () => {
  it('keeps the workspace across stop and start, with a new agent', async () => {
    const spec = contractSpec();
    await provider.create(spec);
    const [firstPid] = agentPidsOf(spec.sandboxId);
    writeFileSync(path.join(workspaceOf(spec.sandboxId), 'notes.txt'), 'kept');

    await provider.stop(spec.sandboxId);
    expect(isAlive(firstPid!)).toBe(false);
    expect(agentPidsOf(spec.sandboxId)).toEqual([]);

    const dataplane = await provider.start(spec.sandboxId);
    expect((await fetch(`${dataplane.httpBaseUrl}/healthz`)).status).toBe(200);
    expect(readFileSync(path.join(workspaceOf(spec.sandboxId), 'notes.txt'), 'utf8')).toBe('kept');
    expect(agentPidsOf(spec.sandboxId)).not.toContain(firstPid);
    await provider.destroy(spec.sandboxId);
  });

  it('destroy removes the workspace, the key and every process of the sandbox', async () => {
    const spec = contractSpec();
    await provider.create(spec);
    const workspace = workspaceOf(spec.sandboxId);
    // What a user process left behind by an agent looks like: working in the workspace, not the agent's child.
    const straggler = spawn('sleep', ['300'], { cwd: workspace, stdio: 'ignore', detached: true });
    const exited = once(straggler, 'exit');
    try {
      const agents = agentPidsOf(spec.sandboxId);
      expect(agents).toHaveLength(1);
      expect(processesWorkingIn(workspace)).toContain(straggler.pid);

      await provider.destroy(spec.sandboxId);
      await waitFor(() => straggler.signalCode !== null, 3000).catch(() => undefined);
      expect(agents.filter(isAlive)).toEqual([]);
      expect(straggler.signalCode).toBe('SIGKILL');
      expect(existsSync(workspace)).toBe(false);
      expect(existsSync(stateDirOf(spec.sandboxId))).toBe(false);
    } finally {
      straggler.kill('SIGKILL');
      await exited;
    }
    expect(await provider.status(spec.sandboxId)).toBe('missing');
  });

  it('restarts a crashed agent on its workspace, at its address, and tells the broker', async () => {
    const exits: unknown[][] = [];
    const own = await startLocalKit({ onAgentExit: (...args) => exits.push(args) });
    try {
      const spec = contractSpec();
      const { dataplane } = await own.provider.create(spec);
      writeFileSync(path.join(own.dataDir, 'workspaces', spec.sandboxId, 'notes.txt'), 'kept');
      const pid = own.provider.agentPid(spec.sandboxId);
      expect(agentPidsOf(spec.sandboxId)).toEqual([pid]);
      process.kill(pid!, 'SIGKILL');
      await waitFor(() => exits.length >= 2, 60_000);
      expect(exits).toEqual([
        [spec.sandboxId, null, 'SIGKILL', { kind: 'restarting', crashes: 1, delayMs: 0 }],
        [spec.sandboxId, null, 'SIGKILL', { kind: 'restarted', crashes: 1, dataplane }],
      ]);
      expect(await own.provider.status(spec.sandboxId)).toBe('running');
      expect(own.provider.agentPid(spec.sandboxId)).not.toBe(pid);
      const token = tokenFor(spec, ['fs:ro']);
      const read = await fetch(`${dataplane.httpBaseUrl}/v1/files/download?path=notes.txt`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(await read.text()).toBe('kept');
    } finally {
      await own.dispose();
    }
  });

  it('leaves no agent alive after close', async () => {
    const own = await startLocalKit();
    const specs = [contractSpec(), contractSpec(), contractSpec()];
    await Promise.all(specs.map((spec) => own.provider.create(spec)));
    const pids = specs.flatMap((spec) => agentPidsOf(spec.sandboxId));
    expect(pids).toHaveLength(3);
    await own.provider.close();
    expect(pids.filter(isAlive)).toEqual([]);
    await own.dispose();
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
