// Audit rows for a sandbox's own events (state changes, provider calls).
import type { SandboxRecord } from '../../store/index.js';
import type { AuditContext, AuditTrail } from '../audit/audit-trail.js';

export type SandboxAuditAction =
  | 'sandbox.provisioning'
  | 'sandbox.active'
  | 'sandbox.claimed'
  | 'sandbox.resumed'
  | 'sandbox.failed'
  | 'sandbox.terminated'
  | 'sandbox.destroy';

export function auditSandbox(
  audit: AuditTrail,
  action: SandboxAuditAction,
  outcome: string,
  context: AuditContext,
  sandbox: Pick<SandboxRecord, 'id' | 'scopeType' | 'scopeId'>,
  detail?: Record<string, string>,
): Promise<void> {
  return audit.record(action, outcome, context, {
    scope: { type: sandbox.scopeType, id: sandbox.scopeId },
    sandboxId: sandbox.id,
    ...(detail === undefined ? {} : { detail }),
  });
}
