// One sandbox of a start-up reconciliation (startup-reconcile.ts): under its
// lock, ask the provider whether its agent runs and, when it does not, record
// what is left of it: `suspended` (workspace kept, the next attach resumes
// it) or `failed` when the provider no longer has it at all.
import { SbxError, type ErrorCode, type SandboxState } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { ProviderSandboxStatus, SandboxProvider } from '../../providers/provider.js';
import type { DueSandbox, ReaperRepository } from '../../store/reaper-repository.js';
import { stateAuditEvent } from './lifecycle-audit.js';
import type { LifecycleTimers } from './lifecycle-settings.js';
import { LOST_BY_PROVIDER, type StateChangeReport } from './reap-sandbox.js';
import { sandboxLockKey } from './sandbox-lock.js';
import { withDeadline } from './with-deadline.js';
import { acquireLeasedLock } from './leased-lock.js';

export interface ReconcileContext {
  readonly repository: Pick<ReaperRepository, 'isDue' | 'applyStateChange'>;
  readonly provider: Pick<SandboxProvider, 'status' | 'stop' | 'destroy'>;
  /** 'startup': before the broker serves (docs/lifecycle.md "After a restart"); 'periodic': the reconciler loop. */
  readonly trigger: 'startup' | 'periodic';
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly clock: () => number;
  readonly logger: Logger;
  readonly timers: Pick<LifecycleTimers, 'providerTimeoutMs'>;
}

export interface ReconcileFailure {
  readonly sandboxId: string;
  readonly code: ErrorCode;
  readonly message: string;
}

export type ReconcileOutcome =
  | { readonly kind: 'kept' | 'busy' }
  | { readonly kind: 'changed'; readonly change: StateChangeReport }
  | { readonly kind: 'error'; readonly failure: ReconcileFailure };

const KEPT: ReconcileOutcome = { kind: 'kept' };

/** What each provider answer says of the agent (a Record, so a new answer must be placed here). */
const AGENT: Readonly<Record<ProviderSandboxStatus, 'up' | 'down' | 'lost'>> = {
  starting: 'up',
  running: 'up',
  stopped: 'down',
  failed: 'down',
  missing: 'lost',
};

/** Where the provider's answer puts a sandbox recorded in `state`; undefined when the record is right. */
export function reconciledState(
  state: SandboxState,
  status: ProviderSandboxStatus,
): 'suspended' | 'failed' | undefined {
  const agent = AGENT[status];
  if (agent === 'lost') return 'failed';
  return agent === 'down' && state !== 'suspended' ? 'suspended' : undefined;
}

/** Never throws: a failure on one sandbox is reported, and the walk goes on. */
export async function reconcileSandbox(
  ctx: ReconcileContext,
  sandbox: DueSandbox,
): Promise<ReconcileOutcome> {
  try {
    const lock = await acquireLeasedLock(ctx.coordination, sandboxLockKey(sandbox.id), (err) =>
      ctx.logger.warn({ err, sandbox_id: sandbox.id }, 'a sandbox lock lapsed while it was reconciled'),
    );
    // Someone is creating, resuming or reaping it right now: its agent is theirs to account for.
    if (lock === null) return { kind: 'busy' };
    try {
      return await reconcileHeld(ctx, sandbox);
    } finally {
      await lock.release().catch((err: unknown) => {
        ctx.logger.warn({ err, sandbox_id: sandbox.id }, 'could not release the sandbox lock');
      });
    }
  } catch (err) {
    const error = SbxError.from(err);
    ctx.logger.warn({ err, sandbox_id: sandbox.id }, 'start-up reconciliation could not check a sandbox');
    return { kind: 'error', failure: { sandboxId: sandbox.id, code: error.code, message: error.message } };
  }
}

async function reconcileHeld(ctx: ReconcileContext, sandbox: DueSandbox): Promise<ReconcileOutcome> {
  // The row may have moved since its page was read (a resume, or the reaper of another instance).
  if (!(await ctx.repository.isDue(sandbox.id, { states: [sandbox.state] }))) return KEPT;
  if (sandbox.state === 'provisioning') return abandonProvisioning(ctx, sandbox);
  const { providerTimeoutMs } = ctx.timers;
  const status = await withDeadline(ctx.provider.status(sandbox.id), providerTimeoutMs, 'provider status');
  let to = reconciledState(sandbox.state, status);
  if (to === undefined) return KEPT;
  let stopError: SbxError | undefined;
  if (to === 'suspended') {
    // Suspended means its processes are gone too: stop sweeps any the dead agent left behind.
    stopError = await stopQuietly(ctx, sandbox.id);
    if (stopError?.code === 'SANDBOX_NOT_FOUND') to = 'failed';
  }
  return changeState(ctx, sandbox, to, status, stopError);
}

async function stopQuietly(ctx: ReconcileContext, sandboxId: string): Promise<SbxError | undefined> {
  try {
    await withDeadline(ctx.provider.stop(sandboxId), ctx.timers.providerTimeoutMs, 'provider stop');
    return undefined;
  } catch (err) {
    const error = SbxError.from(err);
    if (error.code !== 'SANDBOX_NOT_FOUND')
      ctx.logger.warn({ err, sandbox_id: sandboxId }, 'could not sweep a sandbox whose agent is not running');
    return error;
  }
}

/**
 * A sandbox whose creator died while the provider was bringing it up (its walk only hands
 * over `provisioning` rows of a dead instance): failed at once, state first as the reaper's
 * provisioning timeout does, then whatever the provider made of it is destroyed.
 */
async function abandonProvisioning(ctx: ReconcileContext, sandbox: DueSandbox): Promise<ReconcileOutcome> {
  const outcome = await changeState(ctx, sandbox, 'failed', 'missing', undefined, ABANDONED);
  if (outcome.kind !== 'changed') return outcome;
  await withDeadline(
    ctx.provider.destroy(sandbox.id),
    ctx.timers.providerTimeoutMs,
    'provider destroy',
  ).catch((err: unknown) => {
    // The failed retention pass destroys it again later.
    ctx.logger.warn({ err, sandbox_id: sandbox.id }, 'could not destroy an abandoned sandbox');
  });
  return outcome;
}

export const ABANDONED = 'its broker instance stopped while it was being provisioned';

async function changeState(
  ctx: ReconcileContext,
  sandbox: DueSandbox,
  to: 'suspended' | 'failed',
  status: ProviderSandboxStatus,
  stopError: SbxError | undefined,
  failedBecause: string = LOST_BY_PROVIDER,
): Promise<ReconcileOutcome> {
  const at = new Date(ctx.clock());
  const failureReason = to === 'failed' ? failedBecause : undefined;
  const reason = ctx.trigger === 'startup' ? ('startup_reconcile' as const) : ('reconcile' as const);
  const result = await ctx.repository.applyStateChange({
    sandboxId: sandbox.id,
    to,
    due: { states: [sandbox.state] },
    at,
    ...(failureReason === undefined ? {} : { failureReason }),
    audit: (from, current, releasedBindings) =>
      stateAuditEvent({
        sandbox: current,
        from,
        to,
        reason,
        at,
        actor: ctx.trigger === 'startup' ? 'startup-reconcile' : 'reconciler',
        extra: {
          provider_status: status,
          released_bindings: releasedBindings,
          failure_reason: failureReason ?? null,
          // The state changes anyway: no agent runs, whatever is left of its processes.
          ...(stopError === undefined || to === 'failed' ? {} : { stop_error: stopError.message }),
        },
      }),
  });
  if (!result.applied) return KEPT;
  const change = { sandboxId: sandbox.id, from: result.from, to, reason };
  ctx.logger.info(
    { sandbox_id: sandbox.id, from: change.from, to, provider_status: status },
    to === 'failed' && failedBecause === ABANDONED
      ? 'sandbox failed: its broker died while provisioning it'
      : 'sandbox state changed: its agent is not running',
  );
  return { kind: 'changed', change };
}
