// One pass applied to one sandbox, under that sandbox's lock: check it is
// still due, call the provider, change the state (conditionally, audited).
// Provider failures are recorded, never thrown: the round goes on.
import { SbxError, type ErrorCode, type SandboxState } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { AuditRepository } from '../../store/audit-repository.js';
import type { DueFilter, DueSandbox, ReaperRepository } from '../../store/reaper-repository.js';
import { stateAuditEvent, type LifecycleReason } from './lifecycle-audit.js';
import type { LifecycleTimers } from './lifecycle-settings.js';
import type { ReaperPass } from './reaper-passes.js';
import { sandboxLockKey } from './sandbox-lock.js';
import { withDeadline } from './with-deadline.js';
import { acquireLeasedLock } from './leased-lock.js';

export interface ReapContext {
  readonly repository: Pick<ReaperRepository, 'isDue' | 'applyStateChange'>;
  readonly audit: Pick<AuditRepository, 'append'>;
  readonly provider: Pick<SandboxProvider, 'stop' | 'destroy'>;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly logger: Logger;
  readonly timers: LifecycleTimers;
}

export interface StateChangeReport {
  readonly sandboxId: string;
  readonly from: SandboxState;
  readonly to: SandboxState;
  readonly reason: LifecycleReason;
}

export interface ReapFailure {
  readonly sandboxId: string;
  readonly to: SandboxState;
  readonly reason: LifecycleReason;
  readonly code: ErrorCode;
  readonly message: string;
}

export interface ReapOutcome {
  readonly change?: StateChangeReport;
  readonly failure?: ReapFailure;
  /** Someone else held the sandbox's lock: left for the next round. */
  readonly busy?: boolean;
}

/** The failure reason of a sandbox its provider has lost (its workspace is gone). */
export const LOST_BY_PROVIDER = 'the provider no longer has this sandbox';

export async function reapSandbox(
  ctx: ReapContext,
  pass: ReaperPass,
  sandbox: DueSandbox,
  now: Date,
): Promise<ReapOutcome> {
  const lock = await acquireLeasedLock(ctx.coordination, sandboxLockKey(sandbox.id), (err) =>
    ctx.logger.warn({ err, sandbox_id: sandbox.id }, 'a sandbox lock lapsed while it was reaped'),
  );
  if (lock === null) return { busy: true };
  try {
    return pass.order === 'provider-first'
      ? await providerFirst(ctx, pass, sandbox, now)
      : await stateFirst(ctx, pass, sandbox, now);
  } finally {
    await lock.release().catch((err: unknown) => {
      ctx.logger.warn({ err, sandbox_id: sandbox.id }, 'could not release the sandbox lock');
    });
  }
}

async function providerFirst(
  ctx: ReapContext,
  pass: ReaperPass,
  sandbox: DueSandbox,
  now: Date,
): Promise<ReapOutcome> {
  const due = pass.due(now);
  if (!(await ctx.repository.isDue(sandbox.id, due))) return {};
  const error = await callProvider(ctx, pass, sandbox.id);
  const statesOnly: DueFilter = { states: pass.afterProvider ?? due.states };
  if (error === undefined) return changeState(ctx, pass, sandbox, now, statesOnly);
  if (pass.provider === 'stop' && error.code === 'SANDBOX_NOT_FOUND') {
    // Nothing left to suspend or resume: retrying every round would only repeat this error.
    return changeState(
      ctx,
      { ...pass, to: 'failed', failureReason: LOST_BY_PROVIDER },
      sandbox,
      now,
      statesOnly,
    );
  }
  return { failure: await recordFailure(ctx, pass, sandbox, now, error) };
}

async function stateFirst(
  ctx: ReapContext,
  pass: ReaperPass,
  sandbox: DueSandbox,
  now: Date,
): Promise<ReapOutcome> {
  const outcome = await changeState(ctx, pass, sandbox, now, pass.due(now));
  if (outcome.change === undefined || pass.provider === 'none') return outcome;
  const error = await callProvider(ctx, pass, sandbox.id);
  if (error === undefined) return outcome;
  // Best effort: the failed-retention pass destroys it again later.
  return { ...outcome, failure: await recordFailure(ctx, pass, sandbox, now, error) };
}

async function callProvider(
  ctx: ReapContext,
  pass: ReaperPass,
  sandboxId: string,
): Promise<SbxError | undefined> {
  if (pass.provider === 'none') return undefined;
  try {
    await withDeadline(
      ctx.provider[pass.provider](sandboxId),
      ctx.timers.providerTimeoutMs,
      `provider ${pass.provider}`,
    );
    return undefined;
  } catch (err) {
    return SbxError.from(err);
  }
}

async function changeState(
  ctx: ReapContext,
  pass: ReaperPass,
  sandbox: DueSandbox,
  now: Date,
  due: DueFilter,
): Promise<ReapOutcome> {
  const result = await ctx.repository.applyStateChange({
    sandboxId: sandbox.id,
    to: pass.to,
    due,
    at: now,
    ...(pass.failureReason === undefined ? {} : { failureReason: pass.failureReason }),
    audit: (from, current, releasedBindings) =>
      stateAuditEvent({
        sandbox: current,
        from,
        to: pass.to,
        reason: pass.reason,
        at: now,
        actor: 'lease-reaper',
        extra: { released_bindings: releasedBindings, failure_reason: pass.failureReason ?? null },
      }),
  });
  if (!result.applied) return {};
  const change = { sandboxId: sandbox.id, from: result.from, to: pass.to, reason: pass.reason };
  ctx.logger.info(
    { sandbox_id: sandbox.id, from: change.from, to: change.to, reason: change.reason },
    'sandbox state changed',
  );
  return { change };
}

async function recordFailure(
  ctx: ReapContext,
  pass: ReaperPass,
  sandbox: DueSandbox,
  now: Date,
  error: SbxError,
): Promise<ReapFailure> {
  ctx.logger.warn(
    { sandbox_id: sandbox.id, operation: pass.provider, reason: pass.reason, err: error },
    'sandbox provider operation failed',
  );
  const event = stateAuditEvent({
    sandbox,
    from: sandbox.state,
    to: pass.to,
    reason: pass.reason,
    at: now,
    actor: 'lease-reaper',
    failure: { operation: pass.provider, error },
  });
  await ctx.audit.append(event).catch((err: unknown) => {
    ctx.logger.error({ err, sandbox_id: sandbox.id }, 'could not audit a failed lifecycle operation');
  });
  return {
    sandboxId: sandbox.id,
    to: pass.to,
    reason: pass.reason,
    code: error.code,
    message: error.message,
  };
}
