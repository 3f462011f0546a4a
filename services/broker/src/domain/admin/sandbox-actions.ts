// Terminate and recover: a forced state change of one sandbox, done the way the
// lease reaper does its own (same lock, same conditional update, audit row in
// the same transaction) so an admin action and a reaper round never interleave
// on one sandbox. The audit row names the admin, not the reaper.
import { SbxError, type SandboxState } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { Sandbox } from '../../store/generated/client.js';
import type { ReaperRepository } from '../../store/reaper-repository.js';
import type { AuditContext } from '../audit/audit-trail.js';
import type { LifecycleTimers } from '../lifecycle/lifecycle-settings.js';
import { LOST_BY_PROVIDER } from '../lifecycle/reap-sandbox.js';
import { sandboxLockKey } from '../lifecycle/sandbox-lock.js';
import { withDeadline } from '../lifecycle/with-deadline.js';
import type { ForcedMove } from './state-deadlines.js';
import { acquireLeasedLock } from '../lifecycle/leased-lock.js';

export interface SandboxActionDeps {
  readonly reaper: Pick<ReaperRepository, 'applyStateChange'>;
  readonly provider: Pick<SandboxProvider, 'stop' | 'destroy'>;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly timers: LifecycleTimers;
  readonly clock: () => number;
  readonly logger: Logger;
}

export interface MoveResult {
  readonly from: SandboxState;
  readonly to: SandboxState;
}

type Target = Pick<Sandbox, 'id' | 'state' | 'tenantId' | 'scopeType' | 'scopeId'>;

export async function forceMove(
  deps: SandboxActionDeps,
  sandbox: Target,
  planned: ForcedMove,
  context: AuditContext & { readonly note?: string | undefined },
): Promise<MoveResult> {
  const lock = await acquireLeasedLock(deps.coordination, sandboxLockKey(sandbox.id), (err) =>
    deps.logger.warn({ err, sandbox_id: sandbox.id }, 'a sandbox lock lapsed during an operator action'),
  );
  if (lock === null) {
    throw new SbxError('CONFLICT', 'another lifecycle operation holds this sandbox; retry shortly');
  }
  try {
    let move = planned;
    let states: readonly SandboxState[] = [sandbox.state];
    if (move.order === 'provider-first') {
      const lost = await callProvider(deps, move, sandbox.id);
      // A sandbox its provider no longer has cannot be suspended: it failed, as the reaper would record.
      if (lost) move = { ...move, to: 'failed', failureReason: LOST_BY_PROVIDER };
      states = move.afterProvider ?? states;
    }
    const result = await apply(deps, sandbox, move, states, context);
    if (move.order === 'state-first') {
      await callProvider(deps, move, sandbox.id).catch((err: unknown) => {
        // Best effort, as in the reaper: the row is final and the failed-retention pass destroys again.
        deps.logger.warn({ err, sandbox_id: sandbox.id }, 'admin action: provider call failed');
      });
    }
    return result;
  } finally {
    await lock.release().catch((err: unknown) => {
      deps.logger.warn({ err, sandbox_id: sandbox.id }, 'could not release the sandbox lock');
    });
  }
}

/** True when the provider no longer has the sandbox (destroy: nothing left to do; stop: it is lost). */
async function callProvider(deps: SandboxActionDeps, move: ForcedMove, id: string): Promise<boolean> {
  if (move.provider === 'none') return false;
  try {
    await withDeadline(
      deps.provider[move.provider](id),
      deps.timers.providerTimeoutMs,
      `provider ${move.provider}`,
    );
    return false;
  } catch (err) {
    const error = SbxError.from(err);
    if (error.code === 'SANDBOX_NOT_FOUND') return move.provider === 'stop';
    throw new SbxError(
      'PROVIDER_UNAVAILABLE',
      `the provider could not ${move.provider} the sandbox: ${error.message}`,
      {
        cause: err,
        retryAfterSeconds: 5,
      },
    );
  }
}

async function apply(
  deps: SandboxActionDeps,
  sandbox: Target,
  move: ForcedMove,
  states: readonly SandboxState[],
  context: AuditContext & { readonly note?: string | undefined },
): Promise<MoveResult> {
  const at = new Date(deps.clock());
  const { principal } = context;
  const result = await deps.reaper.applyStateChange({
    sandboxId: sandbox.id,
    to: move.to,
    due: { states },
    at,
    ...(move.failureReason === undefined ? {} : { failureReason: move.failureReason }),
    audit: (from, current, released) => ({
      action: 'sandbox.state',
      outcome: 'ok',
      at,
      requestId: context.requestId,
      tenantId: current.tenantId,
      callerId: principal.id,
      callerType: principal.type,
      scopeType: current.scopeType,
      scopeId: current.scopeId,
      sandboxId: current.id,
      detail: {
        from,
        to: move.to,
        reason: move.reason,
        by: 'admin',
        released_bindings: released,
        ...(context.note === undefined ? {} : { note: context.note }),
      },
    }),
  });
  if (!result.applied) {
    const now = result.state ?? 'gone';
    throw new SbxError('CONFLICT', `the sandbox changed state meanwhile (now ${now}); look again`);
  }
  return { from: result.from, to: move.to };
}
