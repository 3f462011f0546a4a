// A real broker for tests: the session and thread routes behind real caller
// authentication, on 127.0.0.1:0, over real repositories on a database the
// test opened (useTestDatabase), a provider of the test's choosing (usually
// FakeProvider) and in-process coordination unless one is given.
//
//   const db = useTestDatabase(backend);
//   const broker = await startBrokerHarness({ database: db(), provider: new FakeProvider() });
//   const key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'] });
//   await request(broker.url).post('/v1/sandbox/sessions').set(bearer(key)).send({…});
//   await broker.close(); // closes the server, never the database
//
// Two harnesses on one database (same `masterKey`) are two broker instances.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express, { type Express, type Router } from 'express';
import { CALLER_SCOPES, type CallerScope } from '@sbx/protocol';
import { assignRequestId, createLogger, errorHandler, notFound, type Logger } from '@sbx/service-kit';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { InProcessCoordination } from '../../src/adapters/redis/in-process-coordination.js';
import { AuditTrail } from '../../src/domain/audit/audit-trail.js';
import { createCallerAuthenticator } from '../../src/domain/auth/authenticate-caller.js';
import type { OidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import {
  DEFAULT_IDEMPOTENCY_SETTINGS,
  IdempotencyGuard,
  type IdempotencySettings,
} from '../../src/domain/idempotency/idempotency-guard.js';
import { KeyVault } from '../../src/domain/keys/key-vault.js';
import { MasterKey } from '../../src/domain/keys/master-key.js';
import {
  DEFAULT_RATE_LIMITS,
  RateLimiter,
  type RateLimits,
} from '../../src/domain/rate-limit/rate-limiter.js';
import type { SessionSettings } from '../../src/domain/sessions/session-core.js';
import { createSessionService, type SessionService } from '../../src/domain/sessions/session-service.js';
import { authenticateCaller } from '../../src/http/auth/caller-auth-middleware.js';
import { sessionRoutes } from '../../src/http/sessions/session-routes.js';
import { threadRoutes } from '../../src/http/threads/thread-routes.js';
import type { SandboxProvider } from '../../src/providers/provider.js';
import {
  createRepositories,
  type Database,
  type PrincipalType,
  type Repositories,
} from '../../src/store/index.js';

export interface BrokerHarnessOptions<P extends SandboxProvider> {
  readonly database: Database;
  readonly provider: P;
  /** Default: a fresh in-process store (so rate limits never leak between harnesses). */
  readonly coordination?: Coordination;
  /** Default: a random one. Brokers sharing a database must share it. */
  readonly masterKey?: MasterKey;
  readonly settings?: Partial<SessionSettings>;
  readonly rateLimits?: RateLimits;
  readonly idempotency?: Partial<IdempotencySettings>;
  /** Accept OIDC access tokens too (e.g. createOidcVerifier over test-oidc-issuer.ts). */
  readonly oidc?: OidcVerifier;
  /** Default: debug level, captured into `logs`. */
  readonly logLevel?: string;
}

export interface HarnessKeyOptions {
  /** Caller scopes (others are stored but mean nothing to the broker). */
  readonly scopes: readonly string[];
  /** Default: the harness's tenant. */
  readonly tenantId?: string;
  /** Default: a fresh principal id. */
  readonly principalId?: string;
  readonly principalType?: PrincipalType;
}

export interface BrokerHarness<P extends SandboxProvider> {
  readonly url: string;
  readonly app: Express;
  readonly server: Server;
  readonly provider: P;
  readonly repositories: Repositories;
  readonly coordination: Coordination;
  readonly masterKey: MasterKey;
  readonly vault: KeyVault;
  readonly service: SessionService;
  /** A tenant id unique to this harness, the default for `apiKey`. */
  readonly tenantId: string;
  /** Every log line the broker wrote (JSON). */
  readonly logs: string[];
  /** Creates an API key for a principal with the given caller scopes; returns the key. */
  apiKey(options: HarnessKeyOptions): Promise<string>;
  close(): Promise<void>;
}

/** Every caller scope: what an admin key holds. */
export const ALL_CALLER_SCOPES: readonly CallerScope[] = CALLER_SCOPES;

export function randomMasterKey(): MasterKey {
  return MasterKey.fromText(randomBytes(32).toString('base64url'));
}

/** `{ Authorization: 'Bearer <key>' }` for supertest's `.set()`. */
export function bearer(key: string): Record<string, string> {
  return { Authorization: `Bearer ${key}` };
}

function captureLogger(lines: string[], level: string): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return createLogger({ service: 'broker-test', level, destination: sink });
}

/** The broker's app shape (createApp's middleware order) with the given routers mounted. */
export function brokerApp(logger: Logger, routers: readonly Router[]): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(assignRequestId);
  app.use(express.json({ limit: '256kb' }));
  for (const router of routers) app.use(router);
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}

export async function startBrokerHarness<P extends SandboxProvider>(
  options: BrokerHarnessOptions<P>,
): Promise<BrokerHarness<P>> {
  const logs: string[] = [];
  const logger = captureLogger(logs, options.logLevel ?? 'debug');
  const repositories = createRepositories(options.database.prisma);
  const coordination =
    options.coordination ?? new InProcessCoordination({ keyPrefix: `test-${randomUUID()}` });
  const masterKey = options.masterKey ?? randomMasterKey();
  const vault = new KeyVault(masterKey);
  const audit = new AuditTrail(repositories.journal, logger);
  const service = createSessionService({
    repositories,
    provider: options.provider,
    vault,
    audit,
    coordination,
    logger,
    settings: options.settings,
  });
  const http = {
    service,
    audit,
    authenticate: authenticateCaller(
      createCallerAuthenticator({ apiKeys: repositories.apiKeys, oidc: options.oidc }),
      logger,
    ),
    rateLimiter: new RateLimiter(coordination, options.rateLimits ?? DEFAULT_RATE_LIMITS, logger),
    idempotency: new IdempotencyGuard(repositories.idempotency, vault, {
      ...DEFAULT_IDEMPOTENCY_SETTINGS,
      ...options.idempotency,
    }),
  };
  const app = brokerApp(logger, [sessionRoutes(http), threadRoutes(http)]);
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const tenantId = `tenant_${randomUUID()}`;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    server,
    provider: options.provider,
    repositories,
    coordination,
    masterKey,
    vault,
    service,
    tenantId,
    logs,
    async apiKey(key) {
      const created = await repositories.apiKeys.create({
        tenantId: key.tenantId ?? tenantId,
        principalId: key.principalId ?? `principal_${randomUUID()}`,
        ...(key.principalType === undefined ? {} : { principalType: key.principalType }),
        scopes: key.scopes,
      });
      return created.key;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (options.coordination === undefined) await coordination.close();
    },
  };
}
