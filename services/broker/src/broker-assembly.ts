// The composition root: the broker wired from its adapters (broker-adapters.ts)
// and settings. createBrokerSystem runs it on the adapters the configuration
// opens; tests run it on theirs (a test database, a fake provider), so the
// broker they exercise is the one that ships.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Express } from 'express';
import { SbxError } from '@sbx/protocol';
import { AuditTrail } from './domain/audit/audit-trail.js';
import { importBootstrapKey } from './domain/auth/bootstrap.js';
import { issueGeneratedAdminKey, type GeneratedAdminKey } from './broker-admin-key.js';
import type { IdempotencySettings } from './domain/idempotency/idempotency-guard.js';
import { announceKeyRotation, forgetRotatedKeys } from './domain/keys/key-rotation-notices.js';
import { KeyVault } from './domain/keys/key-vault.js';
import { createAgentExitHandler } from './domain/lifecycle/agent-exit-handler.js';
import { createInstancePresence } from './domain/lifecycle/instance-presence.js';
import type { LeaseReaper } from './domain/lifecycle/lease-reaper.js';
import { reconcileAtStartup } from './domain/lifecycle/startup-reconcile.js';
import type { AuthFailureLimits } from './domain/rate-limit/auth-failure-limiter.js';
import { DEFAULT_RATE_LIMITS, type RateLimits } from './domain/rate-limit/rate-limiter.js';
import { DEFAULT_SESSION_SETTINGS, type SessionSettings } from './domain/sessions/session-core.js';
import { createSidecarTokenMinter } from './domain/tokens/sidecar-tokens.js';
import { createSessionService, type SessionService } from './domain/sessions/session-service.js';
import { createApp } from './http/app.js';
import type { BrokerHttpHardening } from './config.js';
import type { SandboxProvider } from './providers/provider.js';
import { createRepositories, type Repositories } from './store/index.js';
import { ReaperRepository } from './store/reaper-repository.js';
import type { BrokerAdapters } from './broker-adapters.js';
import { startBrokerLoops } from './broker-loops.js';
import { openWarmPool } from './broker-warm-pool.js';
import { brokerObservability } from './broker-observability.js';
import type { PromBrokerMetrics } from './adapters/metrics/prom-broker-metrics.js';
import { brokerRoutes } from './broker-routes.js';
import { resolveLifecycleTimers } from './domain/lifecycle/lifecycle-settings.js';
import { RELAYED_BODY_PATHS } from './http/sandboxes/sandbox-relay-routes.js';
import { refuseUpgrade } from './http/sandboxes/sandbox-session-socket.js';
import type { CodeRunner } from './domain/execute-code/code-runner.js';
import { BROKER_VERSION } from './version.js';

export interface BrokerSettings {
  /** Token lifetime, lease, hard TTL… (DEFAULT_SESSION_SETTINGS for what is left out). */
  readonly sessions?: Partial<SessionSettings> | undefined;
  /** Default DEFAULT_RATE_LIMITS. */
  readonly rateLimits?: RateLimits | undefined;
  /** Failed authentications per client address (default DEFAULT_AUTH_FAILURE_LIMITS). */
  readonly authFailures?: AuthFailureLimits | undefined;
  /** CORS allowlist, HSTS, trust proxy (default: none, none, off). */
  readonly http?: BrokerHttpHardening | undefined;
  readonly idempotency?: Partial<IdempotencySettings> | undefined;
  /** BROKER_BOOTSTRAP_API_KEY: imported (hashed) before the first request. */
  readonly bootstrapApiKey?: string | undefined;
  /** Without a bootstrap key: an admin key is generated on the first start, its marker kept here. */
  readonly generatedAdminKeyDir?: string | undefined;
  /** Run the lease reaper and the idempotency purge (default true). */
  readonly loops?: boolean | undefined;
  /** METRICS_TOKEN: /metrics then needs `Authorization: Bearer <token>` (docs/operations.md). */
  readonly metricsToken?: string | undefined;
  /** Relay mode (docs/sandboxes.md): data-plane routes through the broker at this public URL. */
  readonly dataplaneRelay?: { readonly publicUrl: string } | undefined;
  /** Between two reads of the agents' usage counters (default 60 s). */
  readonly usageCollectIntervalMs?: number | undefined;
  /** The reconciler's period and this instance's presence TTL (defaults 60 s and 15 s). */
  readonly reconciler?: { readonly intervalMs?: number; readonly presenceTtlMs?: number } | undefined;
  /** Sandboxes this instance keeps warm (default 0: none). */
  readonly warmPoolSize?: number | undefined;
  /** Between two lease reaper rounds (default 15 s). */
  readonly reaperIntervalMs?: number | undefined;
  /** execute_code: the address-space limit of one run, and how agents are reached (tests). */
  readonly executeCode?: { readonly memoryLimitMb?: number; readonly runner?: CodeRunner } | undefined;
}

export interface Broker {
  readonly app: Express;
  /** What confines user processes on this broker ('none' without bubblewrap). */
  readonly isolation: SandboxProvider['isolation'];
  /**
   * The admin key of a data directory's first start (without a bootstrap key), made by this
   * call: call it once the broker listens and print the key at once (broker-admin-key.ts).
   */
  issueAdminKey(): Promise<GeneratedAdminKey | undefined>;
  /** Sandboxes this instance keeps warm (0: no pool). */
  readonly warmPoolSize: number;
  readonly service: SessionService;
  readonly repositories: Repositories;
  readonly vault: KeyVault;
  readonly reaper: LeaseReaper;
  /** This broker's metrics (its own prom-client Registry: `metrics.registry`). */
  readonly metrics: PromBrokerMetrics;
  /** Serves the broker's WebSocket routes (sandbox sessions) on `server`, which serves `app`. */
  attach(server: Server): void;
  /** Stops the loops, then closes the provider, the coordination store and the database. */
  close(): Promise<void>;
}

export async function assembleBroker(
  adapters: BrokerAdapters,
  settings: BrokerSettings = {},
): Promise<Broker> {
  const { logger, clock, database, coordination, provider } = adapters;
  const presence = createInstancePresence({
    coordination,
    instanceId: `brk_${randomUUID()}`,
    logger,
    ttlMs: settings.reconciler?.presenceTtlMs,
  });
  const repositories = createRepositories(database.prisma, { hostInstance: presence.instanceId });
  const vault = new KeyVault(adapters.masterKey);
  const reaperRepository = new ReaperRepository(database.prisma);
  const agentExit = createAgentExitHandler({ repository: reaperRepository, clock, logger });
  adapters.agentExits?.connect(agentExit.listener);
  const { metrics, probes } = brokerObservability(adapters);
  const audit = new AuditTrail(repositories.journal, logger, metrics);
  const tokenIssuer = settings.sessions?.tokenIssuer ?? DEFAULT_SESSION_SETTINGS.tokenIssuer;
  const sidecarTokens = createSidecarTokenMinter(adapters.masterKey, tokenIssuer, clock);
  const keyNotices = await forgetRotatedKeys(coordination, vault, logger);
  const warm = await openWarmPool({
    size: settings.warmPoolSize,
    provider,
    repositories,
    vault,
    hostInstance: presence.instanceId,
    tokenIssuer,
    logger,
    coordination,
  });
  const service = createSessionService({
    warm,
    sidecarTokens,
    announceKeyRotation: announceKeyRotation(coordination),
    repositories,
    provider,
    vault,
    audit,
    coordination,
    logger,
    now: clock,
    settings: settings.sessions,
    metrics,
  });
  const routing = brokerRoutes({
    prisma: database.prisma,
    provider,
    reaperRepository,
    sidecarTokens,
    lifecycleTimers: resolveLifecycleTimers({ idleTimeoutMs: service.settings.idleTimeoutSeconds * 1000 }),
    allowedOrigins: settings.http?.corsAllowedOrigins,
    dataplaneRelay: settings.dataplaneRelay,
    service,
    audit,
    repositories,
    vault,
    coordination,
    oidc: adapters.oidc,
    rateLimits: settings.rateLimits ?? DEFAULT_RATE_LIMITS,
    authFailures: settings.authFailures,
    idempotency: settings.idempotency,
    claimHolders: presence,
    clock,
    logger,
    metrics,
    codeRunner: settings.executeCode?.runner,
    executeCodeMemoryMb: settings.executeCode?.memoryLimitMb,
    admin: {
      prisma: database.prisma,
      provider,
      repositories,
      idleTimeoutMs: service.settings.idleTimeoutSeconds * 1000,
    },
  });

  if (settings.bootstrapApiKey !== undefined)
    await importBootstrapKey(settings.bootstrapApiKey, repositories.apiKeys);
  const keyDir = settings.bootstrapApiKey === undefined ? settings.generatedAdminKeyDir : undefined;

  // Before the first request: agents that died with the previous broker process are recorded as such.
  await presence.start();
  const warmRows = repositories.warmPool;
  await reconcileAtStartup({
    repository: reaperRepository,
    provider,
    coordination,
    clock,
    logger,
    presence,
    warm: warmRows,
  });
  warm?.pool.start();

  const loops = startBrokerLoops({
    repositories,
    reaperRepository,
    provider,
    coordination,
    clock,
    monotonic: adapters.monotonic,
    logger,
    idleTimeoutMs: service.settings.idleTimeoutSeconds * 1000,
    start: settings.loops ?? true,
    metrics,
    usageCollectIntervalMs: settings.usageCollectIntervalMs,
    presence,
    warm: warmRows,
    reaperIntervalMs: settings.reaperIntervalMs,
    reconcileIntervalMs: settings.reconciler?.intervalMs,
  });

  const app = createApp({
    logger,
    version: BROKER_VERSION,
    startedAt: clock(),
    now: clock,
    probes,
    metrics,
    metricsToken: settings.metricsToken,
    routers: routing.routers,
    http: settings.http,
    rawBodyPaths: RELAYED_BODY_PATHS,
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      routing.close();
      await keyNotices().catch(() => undefined);
      await loops.stop();
      await warm?.pool.stop();
      await agentExit.drain();
      await provider.close();
      // Only now may other instances take over this one's sandboxes: its agents have ended.
      await presence.stop();
      // Rows of requests still being answered are written before the database goes.
      await routing.drain();
      await repositories.journal.drain();
      await Promise.allSettled([coordination.close(), database.close()]);
    })();
    return closing;
  };
  const { reaper } = loops;
  return {
    app,
    isolation: provider.isolation,
    issueAdminKey: () =>
      keyDir === undefined
        ? Promise.resolve(undefined)
        : issueGeneratedAdminKey(keyDir, repositories.apiKeys),
    warmPoolSize: warm?.size ?? 0,
    service,
    repositories,
    vault,
    reaper,
    metrics,
    attach: (server) => {
      server.on('upgrade', (req, socket, head) => {
        // A path no socket serves: 404 in the envelope, as over HTTP, not a dropped connection.
        if (!routing.upgrade(req, socket, head))
          refuseUpgrade(socket, new SbxError('NOT_FOUND', 'no WebSocket endpoint at this path'));
      });
    },
    close,
  };
}
