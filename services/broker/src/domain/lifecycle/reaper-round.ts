// One reaper round: take the cross-instance lock, run each pass over its due
// sandboxes (a few at a time, renewing the lock before each), sweep bindings
// left on sandboxes that no longer serve, release the lock.
import { SbxError } from '@sbx/protocol';
import type { Lock } from '../../adapters/redis/coordination.js';
import type { DueSandbox, ReaperRepository } from '../../store/reaper-repository.js';
import { forEachLimited } from './for-each-limited.js';
import type { ReaperPass } from './reaper-passes.js';
import { reapSandbox, type ReapContext, type ReapFailure, type StateChangeReport } from './reap-sandbox.js';
import { REAPER_LOCK_KEY } from './sandbox-lock.js';
import { acquireLeasedLock, LOCK_LEASE_MS } from './leased-lock.js';

export interface ReaperReport {
  /** False when another broker instance held the reaper lock: this round did nothing. */
  readonly ran: boolean;
  readonly changes: readonly StateChangeReport[];
  /** Sandboxes left for the next round because an operation on them failed. */
  readonly failures: readonly ReapFailure[];
  /** Sandboxes skipped because someone else was working on them. */
  readonly busy: number;
  /** Bindings released because their sandbox no longer serves its scope. */
  readonly releasedBindings: number;
}

export interface RoundContext extends Omit<ReapContext, 'repository'> {
  readonly repository: ReaperRepository;
  readonly passes: readonly ReaperPass[];
  readonly clock: () => number;
  /** Checked between sandboxes: true once the reaper is stopping. */
  readonly shouldStop: () => boolean;
}

const NOT_RUN: ReaperReport = { ran: false, changes: [], failures: [], busy: 0, releasedBindings: 0 };

export async function runReaperRound(ctx: RoundContext): Promise<ReaperReport> {
  const lock = await acquireLeasedLock(ctx.coordination, REAPER_LOCK_KEY, (err) =>
    ctx.logger.warn({ err }, 'the reaper round lock lapsed during a round'),
  );
  if (lock === null) return NOT_RUN;
  const changes: StateChangeReport[] = [];
  const failures: ReapFailure[] = [];
  let busy = 0;
  let lockLost = false;
  try {
    for (const pass of ctx.passes) {
      if (ctx.shouldStop() || lockLost) break;
      const now = new Date(ctx.clock());
      const due = await ctx.repository.listDue(pass.due(now), ctx.timers.batchSize);
      await forEachLimited(due, ctx.timers.concurrency, async (sandbox) => {
        if (ctx.shouldStop() || lockLost) return;
        // A failed renewal is treated as a lost lock: going on could overlap another reaper.
        if (!(await lock.extend(LOCK_LEASE_MS).catch(() => false))) {
          lockLost = true;
          return;
        }
        const outcome = await reapGuarded(ctx, pass, sandbox, now);
        if (outcome.change !== undefined) changes.push(outcome.change);
        if (outcome.failure !== undefined) failures.push(outcome.failure);
        if (outcome.busy === true) busy += 1;
      });
    }
    if (lockLost) ctx.logger.warn('lease reaper lost its lock to another instance; round cut short');
    const releasedBindings = await ctx.repository.releaseOrphanedBindings(new Date(ctx.clock()));
    if (releasedBindings > 0)
      ctx.logger.info({ count: releasedBindings }, 'released bindings of ended sandboxes');
    return { ran: true, changes, failures, busy, releasedBindings };
  } finally {
    await releaseQuietly(ctx, lock);
  }
}

/** A database or coordination failure on one sandbox is that sandbox's failure, not the round's. */
async function reapGuarded(
  ctx: RoundContext,
  pass: ReaperPass,
  sandbox: DueSandbox,
  now: Date,
): ReturnType<typeof reapSandbox> {
  try {
    return await reapSandbox(ctx, pass, sandbox, now);
  } catch (err) {
    const error = SbxError.from(err);
    ctx.logger.error(
      { err, sandbox_id: sandbox.id, reason: pass.reason },
      'lease reaper could not act on a sandbox',
    );
    return {
      failure: {
        sandboxId: sandbox.id,
        to: pass.to,
        reason: pass.reason,
        code: error.code,
        message: error.message,
      },
    };
  }
}

async function releaseQuietly(ctx: RoundContext, lock: Lock): Promise<void> {
  try {
    await lock.release();
  } catch (err) {
    // Its TTL frees it anyway.
    ctx.logger.warn({ err }, 'could not release the reaper lock');
  }
}
