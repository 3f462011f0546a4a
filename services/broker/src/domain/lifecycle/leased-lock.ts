// Coordination locks held on a short lease that is renewed while their work runs. A lock
// taken for as long as its work could take (a provider's timeout and more, a reconciler
// round's 2 minutes) outlives a broker killed while holding it by that much: found by
// reliability/broker-faults/broker-kill.test.ts, where a replica killed mid-provision left
// its sandbox "busy" to the other replica's reconciler for 5 minutes (every retry of the
// thread answered 423), and, killed during a reconciler round, stopped every replica's
// rounds for 2 minutes. Renewed, a dead holder's lock lapses within one lease.
import type { Coordination, Lock } from '../../adapters/redis/coordination.js';

/** A dead holder's lock is free again after at most this long. */
export const LOCK_LEASE_MS = 15_000;

/**
 * `key`'s lock on a lease renewed every third of it until released; null when another
 * holder has it. `onLapse` hears of a renewal that failed or found the lock gone (the work
 * goes on: the database's conditional updates stay the last line of defence).
 */
export async function acquireLeasedLock(
  coordination: Pick<Coordination, 'acquireLock'>,
  key: string,
  onLapse?: (err?: unknown) => void,
  leaseMs: number = LOCK_LEASE_MS,
): Promise<Lock | null> {
  const lock = await coordination.acquireLock(key, leaseMs);
  if (lock === null) return null;
  const renew = (): void => {
    Promise.resolve()
      .then(() => lock.extend(leaseMs))
      .then(
        (held) => {
          if (held) return held;
          clearInterval(timer);
          onLapse?.();
          return held;
        },
        (err: unknown) => onLapse?.(err),
      );
  };
  const timer = setInterval(renew, leaseMs / 3);
  timer.unref();
  return {
    token: lock.token,
    extend: (ttlMs) => lock.extend(ttlMs),
    release: () => {
      clearInterval(timer);
      return lock.release();
    },
  };
}
