// A broker whose wall clock jumps 10 minutes forward (docs/lifecycle.md, "Clock jumps"):
// the broker's assembly with the real local provider (agents that verify tokens with their
// own clock), its clock and its monotonic clock injected. Real time passing moves both;
// the jump moves the wall clock alone. The lease reaper (driven by runOnce) must not
// expire, let alone suspend, sandboxes whose holders heartbeat: their leases are judged in
// real time until each had its full length, which is the heartbeat check. A holder that
// stops heartbeating loses its lease a lease after its last heartbeat, as without a jump.
// Tokens: one minted before the jump still verifies (agent, and the broker's own proof of
// possession), and a token verifies at an agent whose clock is within the allowed skew.
// Long form: more sandboxes, and the jump repeated.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ALL_CALLER_SCOPES } from '../../services/broker/test/support/broker-harness.js';
import { backends } from '../../services/broker/test/support/test-database.js';
import { useLocalBroker } from '../../services/broker/test/support/use-local-broker.js';
import { LONG } from './fault-kit.js';

const postgres = backends.find((backend) => backend.name === 'postgres');
const LEASE_SECONDS = 60;
const LEASE_MS = LEASE_SECONDS * 1000;
/** Real time between two heartbeats of a live holder: well within a lease. */
const STEP_MS = 25_000;
const JUMP_MS = 10 * 60_000;
const HOLDERS = LONG ? 8 : 3;
const JUMPS = LONG ? 3 : 1;

/** The broker's two clocks: `pass` is real time passing (both move), `jump` the wall clock alone. */
class TwoClocks {
  #wall = 0;
  #mono = 0;
  readonly now = (): number => Date.now() + this.#wall;
  readonly monotonic = (): number => performance.now() + this.#mono;
  pass(ms: number): void {
    this.#wall += ms;
    this.#mono += ms;
  }
  jump(ms: number): void {
    this.#wall += ms;
  }
}

interface Held {
  readonly thread: string;
  readonly sandboxId: string;
  readonly http: string;
  readonly token: string;
}

(postgres?.available === true ? describe : describe.skip)('a broker whose clock jumps forward', () => {
  const clocks = new TwoClocks();
  const broker = useLocalBroker(postgres!, {
    isolation: 'none',
    clock: clocks.now,
    monotonic: clocks.monotonic,
    loops: false,
    settings: { idleTimeoutSeconds: LEASE_SECONDS, provisioningWaitMs: 30_000 },
  });

  const post = async (key: string, route: string, body: unknown) => {
    const res = await fetch(`${broker.url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const hold = async (key: string): Promise<Held> => {
    const thread = `thr_clock_${randomBytes(4).toString('hex')}`;
    const res = await post(key, `/threads/${thread}/sandbox`, { scopes: ['process'] });
    expect(res.status).toBe(200);
    const endpoints = res.body['endpoints'] as { http: string };
    return {
      thread,
      sandboxId: String(res.body['sandbox_id']),
      http: endpoints.http,
      token: String(res.body['token']),
    };
  };
  const heartbeat = async (key: string, held: Held) =>
    (await post(key, `/threads/${held.thread}/sandbox/heartbeat`, { sandbox_id: held.sandboxId })).status;
  const exec = async (held: Held, token: string) => {
    const res = await fetch(`${held.http}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: 'true', timeout_ms: 10_000 }),
    });
    return { status: res.status, text: await res.text() };
  };
  const states = async (ids: readonly string[]) =>
    (await broker.database.prisma.sandbox.findMany({ where: { id: { in: [...ids] } } })).map(
      (row) => row.state,
    );

  it('keeps heartbeating holders, expires the silent one a lease after its heartbeat', async () => {
    const key = await broker.apiKey({ scopes: ALL_CALLER_SCOPES });
    const holders: Held[] = [];
    for (let i = 0; i < HOLDERS; i += 1) holders.push(await hold(key));
    const abandoned = await hold(key);
    const first = holders[0]!;
    // A lease runs out for real: the abandoned sandbox goes idle, the others heartbeat.
    for (const step of [LEASE_MS / 2, LEASE_MS / 2 + 1000]) {
      clocks.pass(step);
      for (const held of holders) expect(await heartbeat(key, held)).toBe(200);
    }
    await broker.reaper.runOnce();
    expect(await states([abandoned.sandboxId])).toEqual(['idle']);

    const preJumpTokenAnswers: number[] = [];
    for (let jump = 0; jump < JUMPS; jump += 1) {
      clocks.jump(JUMP_MS);
      await broker.reaper.runOnce();
      // Nothing moved: the live leases are held, the idle sandbox is not suspended early.
      expect(await states(holders.map((h) => h.sandboxId))).toEqual(holders.map(() => 'active'));
      expect(await states([abandoned.sandboxId])).toEqual([jump === 0 ? 'idle' : 'suspended']);
      if (jump === 0) {
        // A token from before the jump: the agent and the broker's proof of possession take it.
        const executed = await exec(first, first.token);
        const refreshed = await post(key, `/threads/${first.thread}/sandbox/refresh`, {
          sandbox_id: first.sandboxId,
          current_token: first.token,
        });
        preJumpTokenAnswers.push(executed.status, refreshed.status);
      }

      // The heartbeat check: all holders but the last heartbeat within their lease, in real
      // time, past the hold (a lease and an idle period); the last one's lease (a whole one
      // at the jump) runs out a lease after its heartbeat, not at the jump.
      const silent = holders.at(-1)!;
      const live = holders.slice(0, -1);
      for (let elapsed = STEP_MS; elapsed <= 5 * STEP_MS; elapsed += STEP_MS) {
        clocks.pass(STEP_MS);
        for (const held of live) expect(await heartbeat(key, held)).toBe(200);
        await broker.reaper.runOnce();
        expect(await states(live.map((h) => h.sandboxId))).toEqual(live.map(() => 'active'));
        const [state] = await states([silent.sandboxId]);
        expect({ elapsed, active: state === 'active' }).toEqual({ elapsed, active: elapsed < LEASE_MS });
      }
      expect(await states([abandoned.sandboxId])).toEqual(['suspended']);
      // Its holder comes back: resumed, as after any lapse; a new holder takes its place.
      expect(await heartbeat(key, silent)).toBe(200);
      expect(await states([silent.sandboxId])).toEqual(['active']);
      holders.splice(holders.indexOf(silent), 1, await hold(key));
    }
    expect(preJumpTokenAnswers).toEqual([200, 200]);
    const expired = await broker.database.prisma.auditEvent.count({
      where: {
        action: 'sandbox.state',
        callerId: 'lease-reaper',
        sandboxId: { in: holders.slice(0, -1).map((h) => h.sandboxId) },
      },
    });
    expect(expired).toBe(0);
  });

  it('mints tokens an agent takes while their clocks are within the allowed skew', async () => {
    const key = await broker.apiKey({ scopes: ALL_CALLER_SCOPES });
    // The broker 25 s ahead of its agents: within the 30 s a verifier forgives.
    clocks.jump(25_000 - (clocks.now() - Date.now()));
    const held = await hold(key);
    expect((await exec(held, held.token)).status).toBe(200);
    // Ten minutes ahead is past what any verifier forgives: the broker still takes the token
    // it minted before, the agent refuses the new one and says why.
    clocks.jump(JUMP_MS);
    const far = await post(key, `/threads/${held.thread}/sandbox/refresh`, {
      sandbox_id: held.sandboxId,
      current_token: held.token,
    });
    expect(far.status).toBe(200);
    const refused = await exec(held, String(far.body['token']));
    expect(refused.status).toBe(401);
    expect(refused.text).toContain('not_yet_valid');
  });
});
