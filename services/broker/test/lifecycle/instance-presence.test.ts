// Presence after the coordination store lost its keys (docs/lifecycle.md, "Several
// brokers"): a Redis that restarts empty, or that this instance could not reach, loses
// every instance's key at once, and a peer whose key is missing for that reason is not
// dead. Found by reliability/broker-faults/redis-outage.test.ts: a replica's reconciler
// suspended its live peer's sandbox right after Redis came back. Absences count again
// once this instance has renewed its own key for a full TTL (every live one has by then).
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { createLogger } from '@sbx/service-kit';
import { InProcessCoordination } from '../../src/adapters/redis/in-process-coordination.js';
import { createInstancePresence, presenceKey } from '../../src/domain/lifecycle/instance-presence.js';

const TTL_MS = 15_000;

/** A store shared across instances, which the test can empty (a restart) or make unreachable. */
function restartableStore(now: () => number) {
  let store = new InProcessCoordination({ keyPrefix: `presence-${randomUUID()}`, now });
  let reachable = true;
  const through =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (!reachable) throw new SbxError('BACKEND_UNAVAILABLE', 'Redis unavailable (test)');
      return call(...args);
    };
  return {
    coordination: {
      sharedAcrossInstances: true,
      get: through((key: string) => store.get(key)),
      set: through((key: string, value: string, ttl: number) => store.set(key, value, ttl)),
      del: through((key: string) => store.del(key)),
    },
    peerRenews: (id: string) => store.set(presenceKey(id), 'x', TTL_MS),
    restartEmpty: () => {
      store = new InProcessCoordination({ keyPrefix: store.keyPrefix, now });
    },
    setReachable: (value: boolean) => {
      reachable = value;
    },
  };
}

describe('broker instance presence after the store lost its keys', () => {
  let clock = Date.now();
  const now = () => clock;
  const logger = createLogger({ service: 'presence-test', level: 'silent' });
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(stops.splice(0).map((stop) => stop()));
  });

  const present = async (store: ReturnType<typeof restartableStore>) => {
    const presence = createInstancePresence({
      coordination: store.coordination,
      instanceId: `brk_${randomUUID()}`,
      logger,
      ttlMs: TTL_MS,
      now,
    });
    await presence.start();
    stops.push(() => presence.stop());
    // start() again is a renewal now (the interval's work, on the test's clock).
    const renew = () => presence.start();
    /** Renews every third of the TTL, as the interval does, for a whole TTL. */
    const renewForATtl = async () => {
      for (let i = 0; i < 3; i += 1) {
        clock += TTL_MS / 3;
        await renew();
      }
    };
    return { presence, renew, renewForATtl };
  };

  it('takes a peer without a key for dead while the store kept its keys', async () => {
    const store = restartableStore(now);
    const { presence } = await present(store);
    await store.peerRenews('brk_alive');
    expect(await presence.isAlive('brk_alive')).toBe(true);
    expect(await presence.isAlive('brk_gone')).toBe(false);
  });

  it('counts every instance alive for a TTL after the store restarted empty', async () => {
    const store = restartableStore(now);
    const { presence, renew, renewForATtl } = await present(store);
    store.restartEmpty();
    clock += TTL_MS / 3;
    await renew(); // finds its own key gone before its TTL: the store lost its keys
    expect(await presence.isAlive('brk_peer')).toBe(true);
    clock += TTL_MS / 3;
    await renew();
    expect(await presence.isAlive('brk_peer')).toBe(true);
    await renewForATtl();
    expect(await presence.isAlive('brk_peer')).toBe(false);
  });

  it('counts every instance alive until renewed for a TTL after it could not reach the store', async () => {
    const store = restartableStore(now);
    const { presence, renew, renewForATtl } = await present(store);
    store.setReachable(false);
    clock += TTL_MS / 3;
    await expect(renew()).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    expect(await presence.isAlive('brk_peer')).toBe(true);
    store.setReachable(true);
    clock += TTL_MS / 3;
    await renew();
    expect(await presence.isAlive('brk_peer')).toBe(true);
    await renewForATtl();
    expect(await presence.isAlive('brk_peer')).toBe(false);
  });
});
