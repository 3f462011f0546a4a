// The rate limiter's two buckets against both coordination stores: `session` counted in
// this process first and reported in batches (no store round trip per request), exact
// within a process and shared with other instances within moments; `negotiate` always
// counted by the store, exact across instances; an unreachable store lets requests through.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { RateLimiter, type RateLimitVerdict } from '../../src/domain/rate-limit/rate-limiter.js';
import { availableHarnesses, type CoordinationHarness } from '../redis/coordination-harness.js';
import { captureLogger } from '../support/broker-harness.js';
import { until } from '../support/until.js';

const harnesses = await availableHarnesses();
const subject = { tenantId: 'tenant_rl', principalId: 'agent:one' };
const sessionKey = `rl:session:${JSON.stringify([subject.tenantId, subject.principalId])}`;

describe.each(harnesses)('rate limiter on $name coordination', (factory) => {
  let h: CoordinationHarness;
  const logs: string[] = [];
  const limiter = (coordination: Coordination, session: number, negotiate = 3) =>
    new RateLimiter(
      coordination,
      { perWindow: { session, negotiate }, windowMs: 60_000 },
      captureLogger(logs),
    );
  const takeMany = async (rl: RateLimiter, bucket: 'session' | 'negotiate', n: number) => {
    const verdicts: RateLimitVerdict[] = [];
    for (let i = 0; i < n; i++) verdicts.push(await rl.take(bucket, subject));
    return verdicts;
  };

  beforeAll(() => {
    h = factory.create();
  });
  afterAll(async () => {
    await h.dispose();
  });

  it('refuses the session call past the limit within one process, exactly, with Retry-After', async () => {
    const rl = limiter(await h.open(), 5);
    const verdicts = await takeMany(rl, 'session', 8);
    expect(verdicts.map((v) => v.allowed)).toEqual([true, true, true, true, true, false, false, false]);
    const refusals = verdicts.flatMap((v) => (v.allowed ? [] : [v]));
    expect(refusals.map((v) => v.firstRefusal)).toEqual([true, false, false]);
    expect(refusals[0]?.error).toMatchObject({ code: 'RATE_LIMITED' });
    expect(refusals[0]?.error.retryAfterSeconds).toBeGreaterThan(0);
    expect(refusals[0]?.error.retryAfterSeconds).toBeLessThanOrEqual(60);
  });

  it('answers session calls after the first of a window without waiting for the store', async () => {
    const store = await h.open();
    let held = false;
    const waiting: (() => void)[] = [];
    // The store, but each increment waits while `held`, as a slow Redis would.
    const slow: Coordination = Object.create(store) as Coordination;
    slow.incr = async (...args) => {
      if (held) await new Promise<void>((resolve) => waiting.push(resolve));
      return store.incr(...args);
    };
    const rl = limiter(slow, 5);
    expect((await rl.take('session', subject)).allowed).toBe(true);
    held = true;
    expect((await takeMany(rl, 'session', 5)).map((v) => v.allowed)).toEqual([true, true, true, true, false]);
    held = false;
    for (const release of waiting.splice(0)) release();
    await until(async () => (await store.get(sessionKey)) === '6', 'the batched count of 6');
  });

  it('reports session calls to the shared store, where another instance counts them', async () => {
    const store = await h.open();
    const one = limiter(store, 5);
    expect((await takeMany(one, 'session', 3)).every((v) => v.allowed)).toBe(true);
    await until(async () => (await store.get(sessionKey)) === '3', 'the shared count of 3');
    const two = limiter(await h.openPeer(store), 5);
    expect((await takeMany(two, 'session', 3)).map((v) => v.allowed)).toEqual([true, true, false]);
  });

  it('counts negotiations in the store on every call: exact across instances', async () => {
    const store = await h.open();
    const [one, two] = [limiter(store, 100), limiter(await h.openPeer(store), 100)];
    const order = [one, two, one, two, one];
    const allowed: boolean[] = [];
    for (const rl of order) allowed.push((await rl.take('negotiate', subject)).allowed);
    expect(allowed).toEqual([true, true, true, false, false]);
  });

  it('lets calls through when the store cannot be reached, and says so', async () => {
    const store = await h.open();
    const rl = limiter(store, 1, 1);
    await store.close();
    logs.length = 0;
    expect((await rl.take('session', subject)).allowed).toBe(true);
    expect((await rl.take('negotiate', subject)).allowed).toBe(true);
    expect(logs.join('')).toContain('rate limit not enforced');
  });
});
