import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { countOf, ShellClient } from './shell-client.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Alive and not a zombie waiting to be reaped. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function shellCount(agent: TestAgent): Promise<number> {
  // Only a token holder sees the counters; anyone else learns that the agent is alive.
  const headers = { authorization: `Bearer ${agent.token(['shell:ro'])}` };
  const health = (await (await fetch(`${agent.httpUrl}/healthz`, { headers })).json()) as { shells: number };
  return health.shells;
}

describe('persistent, shared shells', () => {
  let agent: TestAgent;
  let url: string;

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx, { idleGraceMs: 60_000 })] });
    url = `${agent.wsUrl}/v1/shell/ws`;
  });

  afterAll(async () => {
    await agent.close();
  });

  it('outlives its client; reattaching replays what was printed meanwhile, once, then goes on live', async () => {
    const first = await ShellClient.start(url, agent.token(['shell']));
    const id = first.shellId;
    first.type('sleep 0.5; echo MARK-$((40 + 2))');
    await first.waitFor('sleep 0.5');
    first.close();
    await first.socket.closed;
    expect(first.plain()).not.toContain('MARK-42');
    await sleep(1000);

    const second = await ShellClient.start(url, agent.token(['shell']), { shell_session_id: id });
    expect(second.shellId).toBe(id);
    await second.waitFor(/^MARK-42$/m);
    second.type('echo LIVE-$((1 + 1))');
    const text = await second.waitFor(/^LIVE-2$/m);
    expect(countOf(text, '\nMARK-42\n')).toBe(1);
    second.close();
  });

  it('survives its token expiring: 4401, then a fresh token reattaches', async () => {
    const client = await ShellClient.start(url, agent.token(['shell'], { ttlSeconds: 4 }));
    client.type('echo BEFORE-$((1 + 1))');
    await client.waitFor(/^BEFORE-2$/m);
    expect((await client.socket.closed).code).toBe(4401);
    const back = await ShellClient.start(url, agent.token(['shell']), { shell_session_id: client.shellId });
    await back.waitFor(/^BEFORE-2$/m);
    back.type('echo AFTER-$((2 + 2))');
    await back.waitFor(/^AFTER-4$/m);
    back.close();
  });

  it('shows the same output to every attached client', async () => {
    const owner = await ShellClient.start(url, agent.token(['shell']));
    const peer = await ShellClient.start(url, agent.token(['shell'], { sub: 'usr_peer' }), {
      shell_session_id: owner.shellId,
    });
    peer.type('echo SHARED-$((3 * 3))');
    expect(await owner.waitFor(/^SHARED-9$/m)).toMatch(/^SHARED-9$/m);
    expect(await peer.waitFor(/^SHARED-9$/m)).toMatch(/^SHARED-9$/m);
    owner.close();
    peer.close();
  });

  it('lets a shell:ro client watch but refuses its input, resize and signals', async () => {
    const owner = await ShellClient.start(url, agent.token(['shell']), { cols: 100, rows: 30 });
    const observer = await ShellClient.start(url, agent.token(['shell:ro']), {
      shell_session_id: owner.shellId,
      cols: 20,
      rows: 5,
    });
    owner.type('sleep 0.3; echo WATCHED-$((2 + 2))');
    await observer.waitFor(/^WATCHED-4$/m);

    observer.type('echo EVIL-$((1 + 1))');
    observer.send({ type: 'resize', cols: 10, rows: 3 });
    observer.send({ type: 'signal', signal: 'SIGKILL' });
    await observer.socket.next(() => observer.frames.filter((f) => f['type'] === 'error').length === 3);
    const errors = observer.frames.filter((f) => f['type'] === 'error');
    expect(errors.map((f) => (f['error'] as { code: string }).code)).toEqual([
      'CAPABILITY_DENIED',
      'CAPABILITY_DENIED',
      'CAPABILITY_DENIED',
    ]);

    owner.type('stty size; echo OK-$((2 + 2))');
    await owner.waitFor(/^OK-4$/m);
    await observer.waitFor(/^OK-4$/m);
    expect(owner.plain()).toMatch(/^30 100$/m);
    expect(owner.plain()).not.toContain('EVIL-2');
    expect(observer.socket.ws.readyState).toBe(observer.socket.ws.OPEN);
    owner.close();
    observer.close();
  });

  it('ends the shell for every client when one sends close', async () => {
    const owner = await ShellClient.start(url, agent.token(['shell']));
    const peer = await ShellClient.start(url, agent.token(['shell']), { shell_session_id: owner.shellId });
    owner.send({ type: 'close' });
    for (const client of [owner, peer]) {
      expect(await client.nextFrame('exit')).toMatchObject({ signal: 'SIGHUP' });
      expect((await client.socket.closed).code).toBe(1000);
    }
  });

  it('keeps an ended shell for the grace period so a returning client gets its output and exit code', async () => {
    const first = await ShellClient.start(url, agent.token(['shell']));
    const id = first.shellId;
    first.type('sleep 0.3; echo BYE-$((5 + 5)); exit 4');
    await first.waitFor('exit 4');
    first.close();
    await sleep(800);
    const back = await ShellClient.start(url, agent.token(['shell:ro']), { shell_session_id: id });
    expect(await back.nextFrame('exit')).toEqual({ type: 'exit', code: 4 });
    expect(back.plain()).toMatch(/^BYE-10$/m);
    expect((await back.socket.closed).code).toBe(1000);
    const again = await ShellClient.start(url, agent.token(['shell']), { shell_session_id: id });
    expect((await again.socket.closed).code).toBe(4404);
  });
});

describe('idle grace', () => {
  it('kills a shell nobody reattached to within the grace period', async () => {
    const agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx, { idleGraceMs: 300 })] });
    try {
      const url = `${agent.wsUrl}/v1/shell/ws`;
      const client = await ShellClient.start(url, agent.token(['shell']));
      client.type('echo PID-$$');
      const pid = Number(/^PID-(\d+)$/m.exec(await client.waitFor(/^PID-\d+$/m))?.[1]);
      expect(isRunning(pid)).toBe(true);
      expect(await shellCount(agent)).toBe(1);
      client.close();
      await client.socket.closed;

      const deadline = Date.now() + 5000;
      while ((isRunning(pid) || (await shellCount(agent)) > 0) && Date.now() < deadline) await sleep(50);
      expect(isRunning(pid)).toBe(false);
      expect(await shellCount(agent)).toBe(0);
      const late = await ShellClient.start(url, agent.token(['shell']), { shell_session_id: client.shellId });
      expect((await late.socket.closed).code).toBe(4404);
    } finally {
      await agent.close();
    }
  });
});
