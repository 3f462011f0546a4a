// Resuming an idle or suspended sandbox on attach (docs/lifecycle.md): under
// the sandbox's lock, read the row again (the reaper may have moved it), start
// the agent if it was suspended (within the tenant's quota of running agents),
// and move it to active with a fresh lease. A provider that no longer has the
// sandbox (its workspace is gone) fails it, loudly: the caller gets 409 naming the
// reason, never a new sandbox on an empty workspace in its place.
import { SbxError } from '@sbx/protocol';
import type { SandboxProvider } from '../../providers/provider.js';
import type { SandboxRecord, SandboxRepository, SessionTransactions } from '../../store/index.js';
import type { AuditContext, AuditTrail } from '../audit/audit-trail.js';
import { auditSandbox } from './sandbox-audit.js';
import type { SandboxLocks } from './sandbox-locks.js';
import { assertRoomForAgent } from './sandbox-quota.js';
import { providerFailure, sandboxStarting } from './session-errors.js';
import { leaseUntil, type EffectivePolicy } from './session-policy.js';

export interface ResumeDeps {
  readonly sandboxes: SandboxRepository;
  /** Fails a sandbox its provider lost, releasing its bindings. */
  readonly transactions: Pick<SessionTransactions, 'failSandbox'>;
  readonly provider: SandboxProvider;
  readonly audit: AuditTrail;
  readonly locks: SandboxLocks;
  readonly now: () => number;
}

/**
 * The sandbox after resuming it, or as it now is when it was neither idle nor
 * suspended any more; null when it is gone. 423 when the lock stays taken
 * until `deadline`; 403 when the tenant already runs its limit of agents;
 * 503 when the provider cannot start it; 409 when the provider lost it (it is failed now).
 */
export async function resumeSandbox(
  deps: ResumeDeps,
  context: AuditContext,
  sandbox: SandboxRecord,
  policy: EffectivePolicy,
  deadline: number,
): Promise<SandboxRecord | null> {
  const run = await deps.locks.run(sandbox.id, Math.max(0, deadline - deps.now()), async () => {
    const current = await deps.sandboxes.findById(sandbox.id, { tenantId: sandbox.tenantId });
    if (current === null) return null;
    if (current.state !== 'idle' && current.state !== 'suspended') return current;
    return resumeHeld(deps, context, current, policy);
  });
  if (!run.ran) throw sandboxStarting();
  return run.value;
}

async function resumeHeld(
  deps: ResumeDeps,
  context: AuditContext,
  sandbox: SandboxRecord,
  policy: EffectivePolicy,
): Promise<SandboxRecord | null> {
  let urls = {};
  if (sandbox.state === 'suspended') {
    await assertRoomForAgent(deps.sandboxes, policy, sandbox);
    try {
      const dataplane = await deps.provider.start(sandbox.id);
      urls = {
        httpBaseUrl: dataplane.httpBaseUrl,
        wsBaseUrl: dataplane.wsBaseUrl,
        workspacePath: dataplane.workspacePath,
      };
    } catch (err) {
      if (err instanceof SbxError && err.code === 'SANDBOX_NOT_FOUND')
        throw await failLost(deps, context, sandbox, err);
      throw providerFailure(err);
    }
  }
  try {
    const active = await deps.sandboxes.transition(sandbox.id, 'active', {
      from: [sandbox.state],
      leaseExpiresAt: leaseUntil(deps.now(), policy.idleTimeoutSeconds, sandbox.hardExpiresAt),
      ...urls,
    });
    await auditSandbox(deps.audit, 'sandbox.resumed', 'ok', context, active, { from: sandbox.state });
    return active;
  } catch (err) {
    if (!(err instanceof SbxError && err.code === 'CONFLICT')) throw err;
    // Ended (hard TTL, last release) while we were starting it.
    const current = await deps.sandboxes.findById(sandbox.id, { tenantId: sandbox.tenantId });
    return current?.state === 'active' ? current : null;
  }
}

/** Records the sandbox failed with the provider's reason; the error its caller gets. */
async function failLost(
  deps: ResumeDeps,
  context: AuditContext,
  sandbox: SandboxRecord,
  lost: SbxError,
): Promise<SbxError> {
  const reason = `lost while suspended: ${lost.message}`;
  await deps.transactions.failSandbox(sandbox.id, reason, new Date(deps.now()));
  await auditSandbox(deps.audit, 'sandbox.failed', 'SANDBOX_NOT_FOUND', context, sandbox, { reason });
  return new SbxError('CONFLICT', `sandbox ${sandbox.id} cannot be resumed and is now failed: ${reason}`, {
    cause: lost,
    details: { sandbox_id: sandbox.id, state: 'failed', failure_reason: reason },
  });
}
