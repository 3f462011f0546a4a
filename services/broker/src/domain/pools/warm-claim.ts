// An ensure on a new scope claims a warm sandbox when the pool has one it may use
// (docs/warm-pools.md): same network, same limits, no sidecar asked for (a sidecar is a
// container made with the sandbox). The claim commits the sandbox as `active` with its
// creator's binding, then hands it the client's variables; the pool refills behind it.
import { isDeepStrictEqual } from 'node:util';
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { SandboxProvider } from '../../providers/provider.js';
import type { WarmPoolRepository } from '../../store/warm-pool-repository.js';
import type { SessionTransactions } from '../../store/session-transactions.js';
import type { AuditContext, AuditTrail } from '../audit/audit-trail.js';
import type { ResolvedClientPolicy } from '../auth/client-policy.js';
import { auditSandbox } from '../sessions/sandbox-audit.js';
import type { EffectivePolicy } from '../sessions/session-policy.js';
import type { OwnedScope } from '../../store/sandbox-repository.js';
import type { NewSessionBinding, SessionBindingRecord } from '../../store/session-binding-repository.js';
import type { SandboxRecord } from '../../store/sandbox-repository.js';
import type { WarmPool } from './warm-pool.js';

export interface WarmClaimDeps {
  readonly pool: WarmPool;
  readonly repository: Pick<WarmPoolRepository, 'claim'>;
  readonly provider: Pick<SandboxProvider, 'claim'>;
  readonly transactions: Pick<SessionTransactions, 'failSandbox'>;
  readonly audit: AuditTrail;
  readonly logger: Logger;
  readonly now: () => number;
}

export interface WarmClaimRequest {
  readonly context: AuditContext;
  readonly scope: OwnedScope;
  readonly binding: Omit<NewSessionBinding, 'sandboxId'>;
  readonly policy: EffectivePolicy;
  readonly client: ResolvedClientPolicy | undefined;
}

export type WarmClaimResult =
  | { readonly sandbox: SandboxRecord; readonly binding: SessionBindingRecord }
  /** The scope got a live sandbox meanwhile: attach to it as a lost create race does. */
  | 'scope-taken'
  /** Nothing warm this request may use: make one cold. */
  | 'none';

function eligible(deps: WarmClaimDeps, request: WarmClaimRequest): boolean {
  return (
    deps.provider.claim !== undefined &&
    request.policy.environment === deps.pool.kind.environment &&
    request.client?.sidecar === undefined &&
    isDeepStrictEqual({ ...request.policy.limits }, { ...deps.pool.limits })
  );
}

export async function claimWarm(deps: WarmClaimDeps, request: WarmClaimRequest): Promise<WarmClaimResult> {
  if (!eligible(deps, request)) return 'none';
  const { scope, policy } = request;
  const at = deps.now();
  let claimed;
  try {
    claimed = await deps.repository.claim(
      deps.pool.kind,
      {
        ...scope,
        activeAt: new Date(at),
        leaseExpiresAt: new Date(at + policy.idleTimeoutSeconds * 1000),
        hardExpiresAt: new Date(at + policy.hardTtlSeconds * 1000),
      },
      request.binding,
      policy,
    );
  } catch (err) {
    if (err instanceof SbxError && err.details?.['constraint'] === 'sandbox_one_live_per_scope')
      return 'scope-taken';
    throw err;
  }
  if (claimed === null) return 'none';
  deps.pool.refillSoon();
  const { sandbox, binding } = claimed;
  try {
    await deps.provider.claim?.(sandbox.id, {
      tenantId: scope.tenantId,
      environment: request.client?.sandboxEnv ?? {},
    });
  } catch (err) {
    deps.logger.warn(
      { err, sandboxId: sandbox.id },
      'a claimed warm sandbox could not take its client settings',
    );
    await deps.transactions.failSandbox(sandbox.id, 'its warm claim failed', new Date(deps.now()));
    await auditSandbox(deps.audit, 'sandbox.failed', 'error', request.context, sandbox);
    throw err;
  }
  await auditSandbox(deps.audit, 'sandbox.claimed', 'ok', request.context, sandbox, { warm: 'true' });
  return { sandbox, binding };
}
