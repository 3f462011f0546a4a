// One service behind three route families (MVP sessions, full sessions,
// thread routes): they differ in shapes, not in behaviour. The service speaks
// bindings (BINDING_* errors); the MVP routes rename those at the HTTP edge.
import type { WarmPool } from '../pools/warm-pool.js';
import type { WarmPoolRepository } from '../../store/warm-pool-repository.js';
import type { SidecarTokenMinter } from '../tokens/sidecar-tokens.js';
import type { NegotiateRequest } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { SandboxRecord } from '../../store/index.js';
import type { AuditContext, AuditTrail } from '../audit/audit-trail.js';
import type { KeyVault } from '../keys/key-vault.js';
import { Revocations } from '../revocation/revocations.js';
import type { BindingLocator } from './binding-locator.js';
import { negotiate, type NegotiationOptions } from './negotiation.js';
import { SandboxLifecycle } from './sandbox-lifecycle.js';
import { SandboxLocks } from './sandbox-locks.js';
import {
  DEFAULT_SESSION_SETTINGS,
  type SessionCore,
  type SessionRepositories,
  type SessionSettings,
  type SessionState,
  type SessionWithToken,
  tenantPolicy,
} from './session-core.js';
import {
  getSession,
  heartbeatSession,
  refreshSession,
  releaseSession,
  type Heartbeat,
  type RefreshOptions,
} from './session-holder.js';
import type { BrokerMetrics } from '../metrics/broker-metrics.js';
import { SessionTokens } from './session-tokens.js';

export interface SessionServiceDeps {
  readonly repositories: SessionRepositories;
  readonly provider: SandboxProvider;
  readonly vault: KeyVault;
  readonly audit: AuditTrail;
  /** For the per-sandbox lock shared with the lease reaper. */
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly logger: Logger;
  readonly settings?: Partial<SessionSettings> | undefined;
  readonly now?: (() => number) | undefined;
  /** Provisioning times (NO_METRICS when absent). */
  readonly metrics?: Pick<BrokerMetrics, 'provisioned'> | undefined;
  /** Signs client sidecars' pod-scoped JWTs (absent: no sidecar is ever asked for). */
  readonly sidecarTokens?: SidecarTokenMinter | undefined;
  /** This instance's warm pool (docs/warm-pools.md); absent: every sandbox starts cold. */
  readonly warm?: { readonly pool: WarmPool; readonly repository: WarmPoolRepository } | undefined;
  /** Tells the other broker instances a sandbox's key was rotated (key-rotation-notices.ts). */
  readonly announceKeyRotation?: ((sandboxId: string) => Promise<void>) | undefined;
}

export interface SessionService {
  readonly settings: SessionSettings;
  negotiate(
    context: AuditContext,
    request: NegotiateRequest,
    options?: NegotiationOptions,
  ): Promise<SessionWithToken>;
  get(context: AuditContext, locator: BindingLocator): Promise<SessionState>;
  refresh(
    context: AuditContext,
    locator: BindingLocator,
    options?: RefreshOptions,
  ): Promise<SessionWithToken>;
  heartbeat(context: AuditContext, locator: BindingLocator): Promise<Heartbeat>;
  release(context: AuditContext, locator: BindingLocator): Promise<void>;
  /**
   * Brings an idle or suspended sandbox back as its holders' requests do (`ready`): for
   * a data-plane call through the relay. Null when it ended meanwhile.
   */
  resume(context: AuditContext, sandbox: SandboxRecord): Promise<SandboxRecord | null>;
  /** `POST /admin/revocations`: one token, a binding's tokens, or a sandbox's key. */
  readonly revocations: Revocations;
}

export function createSessionService(deps: SessionServiceDeps): SessionService {
  const settings: SessionSettings = { ...DEFAULT_SESSION_SETTINGS, ...deps.settings };
  const now = deps.now ?? Date.now;
  const { repositories, provider, vault, audit, logger } = deps;
  const lifecycle = new SandboxLifecycle({
    sandboxes: repositories.sandboxes,
    transactions: repositories.sessionTransactions,
    provider,
    vault,
    audit,
    locks: new SandboxLocks(deps.coordination, logger, now),
    logger,
    tokenIssuer: settings.tokenIssuer,
    provisioningWaitMs: settings.provisioningWaitMs,
    now,
    metrics: deps.metrics,
    sidecarTokens: deps.sidecarTokens,
    warm:
      deps.warm === undefined
        ? undefined
        : { ...deps.warm, provider, transactions: repositories.sessionTransactions, audit, logger, now },
  });
  const tokens = new SessionTokens({
    vault,
    issuances: repositories.journal,
    audit,
    issuer: settings.tokenIssuer,
    now,
    format: settings.tokenFormat,
  });
  const core: SessionCore = {
    repositories,
    provider,
    vault,
    audit,
    lifecycle,
    tokens,
    settings,
    logger,
    now,
  };
  const service: SessionService = {
    settings,
    negotiate: (context, request, options) => negotiate(core, context, request, options),
    get: (context, locator) => getSession(core, context, locator),
    refresh: (context, locator, options) => refreshSession(core, context, locator, options),
    heartbeat: (context, locator) => heartbeatSession(core, context, locator),
    release: (context, locator) => releaseSession(core, context, locator),
    resume: async (context, sandbox) =>
      lifecycle.ready(context, sandbox, await tenantPolicy(core, sandbox.tenantId)),
    revocations: new Revocations({
      store: repositories.revocations,
      provider,
      vault,
      audit,
      now,
      announceRotation: deps.announceKeyRotation,
    }),
  };
  return Object.freeze(service);
}
