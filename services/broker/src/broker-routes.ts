// The broker's API route families behind caller authentication, rate limits
// and Idempotency-Key handling.
import type { Router } from 'express';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from './adapters/redis/coordination.js';
import type { AuditTrail } from './domain/audit/audit-trail.js';
import { createCallerAuthenticator } from './domain/auth/authenticate-caller.js';
import type { OidcVerifier } from './domain/auth/oidc-verifier.js';
import {
  DEFAULT_IDEMPOTENCY_SETTINGS,
  IdempotencyGuard,
  type ClaimHolders,
  type IdempotencySettings,
} from './domain/idempotency/idempotency-guard.js';
import type { KeyVault } from './domain/keys/key-vault.js';
import type { BrokerMetrics } from './domain/metrics/broker-metrics.js';
import {
  AuthFailureLimiter,
  DEFAULT_AUTH_FAILURE_LIMITS,
  type AuthFailureLimits,
} from './domain/rate-limit/auth-failure-limiter.js';
import { RateLimiter, type RateLimits } from './domain/rate-limit/rate-limiter.js';
import type { SessionService } from './domain/sessions/session-service.js';
import { adminRoutes, type AdminAssembly } from './http/admin/admin-routes.js';
import { authenticateCaller } from './http/auth/caller-auth-middleware.js';
import { whoamiRoutes } from './http/auth/whoami-routes.js';
import { revocationRoutes } from './http/admin/revocation-routes.js';
import { introspectionRoutes } from './http/oauth/introspection-routes.js';
import { jwksRoutes } from './http/oauth/jwks-routes.js';
import type { SidecarTokenMinter } from './domain/tokens/sidecar-tokens.js';
import { tokenRoutes } from './http/oauth/token-routes.js';
import { sessionRoutes } from './http/sessions/session-routes.js';
import { threadRoutes } from './http/threads/thread-routes.js';
import { executeCodeRoutes } from './http/execute-code/execute-code-routes.js';
import { httpCodeRunner, type CodeRunner } from './domain/execute-code/code-runner.js';
import { ExecuteCodeService } from './domain/execute-code/execute-code-service.js';
import type { Repositories } from './store/index.js';
import type { PrismaClient } from './store/generated/client.js';
import type { ReaperRepository } from './store/reaper-repository.js';
import type { SandboxProvider } from './providers/provider.js';
import type { LifecycleTimers } from './domain/lifecycle/lifecycle-settings.js';
import type { UpgradeHandler } from './http/sandboxes/sandbox-session-socket.js';
import { sandboxRouting } from './broker-sandbox-routes.js';

export interface BrokerRoutesDeps {
  readonly service: SessionService;
  readonly sidecarTokens: SidecarTokenMinter;
  readonly audit: AuditTrail;
  readonly repositories: Pick<
    Repositories,
    | 'apiKeys'
    | 'idempotency'
    | 'bindings'
    | 'sandboxes'
    | 'journal'
    | 'revocations'
    | 'tokens'
    | 'policies'
    | 'executeCodeQuota'
    | 'invocations'
  >;
  /** How execute_code reaches agents (default: HTTP `POST /v1/code`). */
  readonly codeRunner?: CodeRunner | undefined;
  /** Address-space limit of one execute_code run, MiB. */
  readonly executeCodeMemoryMb?: number | undefined;
  readonly vault: KeyVault;
  readonly coordination: Coordination;
  readonly oidc: OidcVerifier | undefined;
  readonly rateLimits: RateLimits;
  /** Failed authentications per client address (default DEFAULT_AUTH_FAILURE_LIMITS). */
  readonly authFailures?: AuthFailureLimits | undefined;
  readonly idempotency: Partial<IdempotencySettings> | undefined;
  /** This broker instance and its peers' presence: claims of a dead peer are taken over. */
  readonly claimHolders?: ClaimHolders | undefined;
  readonly clock: () => number;
  readonly logger: Logger;
  /** Absent: no `/admin/*` operator API (docs/admin.md). */
  readonly admin?: AdminAssembly | undefined;
  /** Rate-limit and authentication refusals. */
  readonly metrics?: BrokerMetrics | undefined;
  /** The sandbox resource API's store, provider and lifecycle timers (docs/sandboxes.md). */
  readonly prisma: PrismaClient;
  readonly provider: Pick<SandboxProvider, 'stop' | 'destroy'>;
  readonly reaperRepository: Pick<ReaperRepository, 'applyStateChange'>;
  readonly lifecycleTimers: LifecycleTimers;
  /** Browser origins allowed to open WebSockets (none: no browser). */
  readonly allowedOrigins?: readonly string[] | undefined;
  /** Relay mode (DATAPLANE_RELAY=on): the broker's public URL its dataplane addresses start with. */
  readonly dataplaneRelay?: { readonly publicUrl: string } | undefined;
}

export interface BrokerRouting {
  readonly routers: Router[];
  /** WebSocket upgrades the broker serves (sandbox sessions); false: not one of its paths. */
  readonly upgrade: UpgradeHandler;
  close(): void;
  /** Gives back the quota units execute_code took ahead (shutdown, before the database closes). */
  drain(): Promise<void>;
}

/** The session routes (`/v1/sandbox/sessions…`), the thread routes (`/threads/…`), `/oauth/token` and `/oauth/introspect`, in that order. */
export function brokerRoutes(deps: BrokerRoutesDeps): BrokerRouting {
  const { repositories, logger } = deps;
  const authFailureLimiter = new AuthFailureLimiter(
    deps.coordination,
    deps.authFailures ?? DEFAULT_AUTH_FAILURE_LIMITS,
    logger,
  );
  const callers = createCallerAuthenticator({
    apiKeys: repositories.apiKeys,
    oidc: deps.oidc,
    onKeyUsageError: (err) => logger.warn({ err }, "could not record an API key's last use"),
  });
  const http = {
    service: deps.service,
    audit: deps.audit,
    authenticate: authenticateCaller(callers, logger, deps.metrics, authFailureLimiter),
    rateLimiter: new RateLimiter(deps.coordination, deps.rateLimits, logger, deps.metrics),
    idempotency: new IdempotencyGuard(
      repositories.idempotency,
      deps.vault,
      { ...DEFAULT_IDEMPOTENCY_SETTINGS, ...deps.idempotency },
      deps.clock,
      deps.claimHolders,
    ),
  };
  const admin =
    deps.admin === undefined ? [] : adminRoutes({ ...deps, ...deps.admin, authenticate: http.authenticate });
  const sandboxes = sandboxRouting(deps, http, callers, authFailureLimiter);
  // Relay mode: the session and thread routes present the broker's dataplane addresses.
  const sessions = { ...http, service: sandboxes.sessionView };
  const executeCode = executeCodeService(deps);
  // The agents' hot paths first: Express tries every route mounted before the one that matches.
  const routers = [
    executeCodeRoutes({ ...http, executeCode }, deps.clock),
    ...sandboxes.routers,
    ...admin,
    sessionRoutes(sessions),
    threadRoutes(sessions),
    tokenRoutes({ ...deps, rateLimiter: http.rateLimiter, authFailureLimiter }),
    introspectionRoutes(deps),
    jwksRoutes(deps.sidecarTokens),
    revocationRoutes({ ...http, revocations: deps.service.revocations }),
    whoamiRoutes(http.authenticate),
  ];
  return {
    routers,
    upgrade: sandboxes.upgrade,
    close: () => sandboxes.close(),
    drain: () => executeCode.drain(),
  };
}

function executeCodeService(deps: BrokerRoutesDeps): ExecuteCodeService {
  return new ExecuteCodeService({
    sessions: deps.service,
    policies: deps.repositories.policies,
    quota: deps.repositories.executeCodeQuota,
    // Through the journal: rows of calls answered back to back share commits.
    invocations: { record: (row) => deps.repositories.journal.recordInvocation(row) },
    runner: deps.codeRunner ?? httpCodeRunner,
    logger: deps.logger,
    now: deps.clock,
    ...(deps.executeCodeMemoryMb === undefined ? {} : { memoryLimitMb: deps.executeCodeMemoryMb }),
  });
}
