// The audit row of a lifecycle state change (or of a failed attempt at one).
import { SbxError, type ErrorCode, type SandboxState } from '@sbx/protocol';
import type { NewAuditEvent } from '../../store/audit-repository.js';
import type { DueSandbox } from '../../store/reaper-repository.js';

export const STATE_AUDIT_ACTION = 'sandbox.state';

export type LifecycleReason =
  | 'lease_expired'
  | 'hard_ttl'
  | 'provisioning_timeout'
  | 'agent_exit'
  | 'crash_loop'
  | 'failed_retention'
  | 'startup_reconcile'
  | 'reconcile';

/** Who made the change, recorded as the caller of a system action. */
export type LifecycleActor = 'lease-reaper' | 'agent-exit' | 'startup-reconcile' | 'reconciler';

export interface StateAudit {
  readonly sandbox: DueSandbox;
  readonly from: SandboxState;
  readonly to: SandboxState;
  readonly reason: LifecycleReason;
  readonly at: Date;
  readonly actor: LifecycleActor;
  /** Present for a failed attempt: the provider operation and its error. */
  readonly failure?: { readonly operation: string; readonly error: SbxError };
  readonly extra?: Readonly<Record<string, string | number | null>>;
}

export interface LifecycleFailure {
  readonly code: ErrorCode;
  readonly message: string;
}

export function describeFailure(err: unknown): LifecycleFailure {
  const error = SbxError.from(err);
  return { code: error.code, message: error.message };
}

export function stateAuditEvent(audit: StateAudit): NewAuditEvent {
  const { sandbox, failure } = audit;
  return {
    action: STATE_AUDIT_ACTION,
    outcome: failure === undefined ? 'ok' : 'error',
    at: audit.at,
    tenantId: sandbox.tenantId,
    callerType: 'system',
    callerId: audit.actor,
    scopeType: sandbox.scopeType,
    scopeId: sandbox.scopeId,
    sandboxId: sandbox.id,
    detail: {
      from: audit.from,
      to: audit.to,
      reason: audit.reason,
      ...audit.extra,
      ...(failure === undefined
        ? {}
        : { operation: failure.operation, error_code: failure.error.code, error: failure.error.message }),
    },
  };
}
