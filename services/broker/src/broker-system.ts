import type { Express } from 'express';
import type { Logger } from '@sbx/service-kit';
import { createCoordination } from './adapters/redis/create-coordination.js';
import type { BrokerConfig } from './config.js';
import { AuditTrail } from './domain/audit/audit-trail.js';
import { createCallerAuthenticator } from './domain/auth/authenticate-caller.js';
import { ensureGeneratedAdminKey, importBootstrapKey } from './domain/auth/bootstrap.js';
import { createOidcVerifier } from './domain/auth/oidc-verifier.js';
import { IdempotencyGuard } from './domain/idempotency/idempotency-guard.js';
import { KeyVault } from './domain/keys/key-vault.js';
import { loadMasterKey } from './domain/keys/master-key.js';
import { createAgentExitHandler } from './domain/lifecycle/agent-exit-handler.js';
import { createLeaseReaper } from './domain/lifecycle/lease-reaper.js';
import { reconcileAtStartup } from './domain/lifecycle/startup-reconcile.js';
import { RateLimiter } from './domain/rate-limit/rate-limiter.js';
import { createSessionService } from './domain/sessions/session-service.js';
import { createApp } from './http/app.js';
import { authenticateCaller } from './http/auth/caller-auth-middleware.js';
import { sessionRoutes } from './http/sessions/session-routes.js';
import { threadRoutes } from './http/threads/thread-routes.js';
import { LocalProvider } from './providers/local-provider.js';
import { openDatabase } from './store/database.js';
import { createRepositories } from './store/index.js';
import { ReaperRepository } from './store/reaper-repository.js';
import { BROKER_VERSION } from './version.js';

export interface BrokerSystem {
  readonly app: Express;
  /** What confines user processes on this broker ('none' without bubblewrap). */
  readonly isolation: LocalProvider['isolation'];
  /** An admin key generated on this start (embedded mode, first start only): print it once. */
  readonly generatedAdminKey: string | undefined;
  close(): Promise<void>;
}

const IDEMPOTENCY_PURGE_MS = 10 * 60_000;

const LOCAL_OWNERSHIP_WARNING =
  'local sandboxes belong to the broker process that started their agents, and the database does not ' +
  'record which one: at start this broker suspends every local sandbox whose agent it does not run ' +
  'itself. Run one broker per database with the local provider (docs/lifecycle.md, "After a restart")';

/** The one composition root: configuration and adapters in, a ready HTTP app out. */
export async function createBrokerSystem(
  config: BrokerConfig,
  logger: Logger,
  now: () => number,
): Promise<BrokerSystem> {
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    migrate: true,
  });
  if (database.appliedMigrations.length > 0)
    logger.info({ migrations: database.appliedMigrations }, 'applied migrations');
  const coordination = await createCoordination({
    redisUrl: config.redisUrl,
    keyPrefix: 'sbx',
    onError: (err) => logger.warn({ err }, 'coordination error'),
  });
  if (coordination.warning !== undefined) logger.warn(coordination.warning);

  const repositories = createRepositories(database.prisma);
  const vault = new KeyVault(await loadMasterKey({ masterKey: config.masterKey, dataDir: config.dataDir }));
  const reaperRepository = new ReaperRepository(database.prisma);
  const agentExit = createAgentExitHandler({ repository: reaperRepository, clock: now, logger });
  const provider = await LocalProvider.open({
    dataDir: config.dataDir,
    logger,
    isolation: config.localIsolation,
    onAgentExit: agentExit.listener,
  });
  const audit = new AuditTrail(repositories.journal, logger);
  const service = createSessionService({
    repositories,
    provider,
    vault,
    audit,
    coordination,
    logger,
    now,
    settings: {
      defaultTokenTtlSeconds: config.tokenTtlSeconds,
      idleTimeoutSeconds: config.idleTimeoutSeconds,
      hardTtlSeconds: config.hardTtlSeconds,
    },
  });
  const oidc =
    config.oidc === undefined
      ? undefined
      : createOidcVerifier({
          issuer: config.oidc.issuer,
          audience: config.oidc.audience,
          jwksUri: config.oidc.jwksUrl,
        });
  const http = {
    service,
    audit,
    authenticate: authenticateCaller(
      createCallerAuthenticator({ apiKeys: repositories.apiKeys, oidc }),
      logger,
    ),
    rateLimiter: new RateLimiter(
      coordination,
      {
        perWindow: {
          negotiate: config.rateLimits.negotiatePerMinute,
          session: config.rateLimits.sessionPerMinute,
        },
        windowMs: 60_000,
      },
      logger,
    ),
    idempotency: new IdempotencyGuard(repositories.idempotency, vault),
  };

  let generatedAdminKey: string | undefined;
  if (config.bootstrapApiKey !== undefined)
    await importBootstrapKey(config.bootstrapApiKey, repositories.apiKeys);
  else if (config.databaseUrl === undefined) {
    generatedAdminKey = (await ensureGeneratedAdminKey(config.dataDir, repositories.apiKeys))?.key;
  }

  // Before the first request: agents that died with the previous broker process are recorded as such.
  if (coordination.sharedAcrossInstances) logger.warn(LOCAL_OWNERSHIP_WARNING);
  await reconcileAtStartup({ repository: reaperRepository, provider, coordination, clock: now, logger });

  const reaper = createLeaseReaper({
    repository: reaperRepository,
    audit: repositories.audit,
    provider,
    coordination,
    clock: now,
    logger,
    idleTimeoutMs: config.idleTimeoutSeconds * 1000,
  });
  reaper.start();
  const purge = setInterval(() => {
    repositories.idempotency
      .purgeExpired()
      .catch((err: unknown) => logger.warn({ err }, 'idempotency purge failed'));
  }, IDEMPOTENCY_PURGE_MS);
  purge.unref();

  const app = createApp({
    logger,
    version: BROKER_VERSION,
    startedAt: now(),
    now,
    probes: [
      { name: 'database', check: () => database.ping() },
      { name: 'coordination', check: async () => void (await coordination.get('health')) },
    ],
    routers: [sessionRoutes(http), threadRoutes(http)],
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      clearInterval(purge);
      await reaper.stop();
      await agentExit.drain();
      await provider.close();
      // Rows of requests still being answered are written before the database goes.
      await repositories.journal.drain();
      await Promise.allSettled([coordination.close(), database.close()]);
    })();
    return closing;
  };
  return { app, isolation: provider.isolation, generatedAdminKey, close };
}
