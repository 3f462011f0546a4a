// The per-sandbox coordination lock the lease reaper also takes
// (`sandbox:<id>`, docs/lifecycle.md): negotiation holds it while it changes a
// sandbox together with its provider (create, resume, destroy), so a resume
// and the reaper's suspension of the same sandbox never interleave. The
// database's conditional transitions stay the last line of defence: when the
// coordination store is unreachable the work goes ahead without the lock.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@sbx/service-kit';
import type { Coordination, Lock } from '../../adapters/redis/coordination.js';
import { acquireLeasedLock } from '../lifecycle/leased-lock.js';
import { sandboxLockKey } from '../lifecycle/sandbox-lock.js';

export type LockedRun<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

export class SandboxLocks {
  constructor(
    private readonly coordination: Pick<Coordination, 'acquireLock'>,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  /** Runs `work` holding the sandbox's lock, waiting up to `waitMs` for another holder; `ran: false` when it never came free. */
  async run<T>(sandboxId: string, waitMs: number, work: () => Promise<T>): Promise<LockedRun<T>> {
    const lock = await this.#acquire(sandboxId, waitMs);
    if (lock === 'busy') return { ran: false };
    try {
      return { ran: true, value: await work() };
    } finally {
      await lock?.release().catch((err: unknown) => {
        this.logger.warn({ err, sandboxId }, 'could not release a sandbox lock (it expires by itself)');
      });
    }
  }

  async #acquire(sandboxId: string, waitMs: number): Promise<Lock | null | 'busy'> {
    const deadline = this.now() + waitMs;
    for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
      try {
        // On a renewed lease: a broker killed mid-create frees its sandbox within one lease.
        const lock = await acquireLeasedLock(this.coordination, sandboxLockKey(sandboxId), (err) =>
          this.logger.warn({ err, sandboxId }, 'a sandbox lock lapsed while its work ran'),
        );
        if (lock !== null) return lock;
      } catch (err) {
        this.logger.warn(
          { err, sandboxId },
          'sandbox lock unavailable; going ahead on database guards alone',
        );
        return null;
      }
      if (this.now() >= deadline) return 'busy';
      await sleep(pause);
    }
  }
}
