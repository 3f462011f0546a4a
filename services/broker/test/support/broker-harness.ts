// A real broker for tests: the broker's own assembly (assembleBroker: routes,
// /healthz, OpenAPI, start-up reconciliation, reaper and purge loops) on
// 127.0.0.1:0, over a database the test opened, a provider of the test's
// choosing (usually FakeProvider) and in-process coordination unless one is given.
// In a test file, useBroker() (use-broker.ts) does all of this for you.
//
//   const db = useTestDatabase(backend);
//   const broker = await startBrokerHarness({ database: db(), provider: new FakeProvider() });
//   const key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'] });
//   await request(broker.url).post('/v1/sandbox/sessions').set(bearer(key)).send({…});
//   await broker.close(); // closes the server and what the harness created, never the database or provider
//
// Two harnesses on one database (same `masterKey`) are two broker instances.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Express } from 'express';
import { CALLER_SCOPES, type CallerScope } from '@sbx/protocol';
import { createLogger, type Logger } from '@sbx/service-kit';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { InProcessCoordination } from '../../src/adapters/redis/in-process-coordination.js';
import type { AgentExitRelay } from '../../src/broker-adapters.js';
import { assembleBroker, type Broker, type BrokerSettings } from '../../src/broker-assembly.js';
import type { OidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import type { IdempotencySettings } from '../../src/domain/idempotency/idempotency-guard.js';
import type { KeyVault } from '../../src/domain/keys/key-vault.js';
import { MasterKey } from '../../src/domain/keys/master-key.js';
import type { LeaseReaper } from '../../src/domain/lifecycle/lease-reaper.js';
import type { RateLimits } from '../../src/domain/rate-limit/rate-limiter.js';
import type { SessionSettings } from '../../src/domain/sessions/session-core.js';
import type { SessionService } from '../../src/domain/sessions/session-service.js';
import type { SandboxProvider } from '../../src/providers/provider.js';
import type { Database, PrincipalType, Repositories } from '../../src/store/index.js';

export interface BrokerHarnessOptions<P extends SandboxProvider> {
  /** The test's: never closed by the harness. */
  readonly database: Database;
  /** The test's: never closed by the harness. */
  readonly provider: P;
  /** Where `provider` reports agent exits, when the test built it with `onAgentExit: relay.listener`. */
  readonly agentExits?: AgentExitRelay;
  /** Default: a fresh in-process store (so rate limits never leak between harnesses), closed with it. */
  readonly coordination?: Coordination;
  /** Default: a random one. Brokers sharing a database must share it. */
  readonly masterKey?: MasterKey;
  readonly settings?: Partial<SessionSettings>;
  /** Default DEFAULT_RATE_LIMITS. */
  readonly rateLimits?: RateLimits;
  /** Failed authentications per client address, CORS, HSTS, trust proxy (BrokerSettings). */
  readonly authFailures?: BrokerSettings['authFailures'];
  readonly http?: BrokerSettings['http'];
  readonly idempotency?: Partial<IdempotencySettings>;
  /** Accept OIDC access tokens too (e.g. createOidcVerifier over test-oidc-issuer.ts). */
  readonly oidc?: OidcVerifier;
  /** Run the lease reaper and the idempotency purge as the broker does (default true). */
  readonly loops?: boolean;
  /** The broker's clock (default Date.now): quota windows, leases, token times. */
  readonly clock?: () => number;
  /**
   * A clock that never jumps, next to which the lease reaper sees (and holds back) forward
   * jumps of `clock` (BrokerAdapters.monotonic). Default none: a test moving `clock` to make
   * the reaper act is not a jump.
   */
  readonly monotonic?: () => number;
  /** Relay mode (DATAPLANE_RELAY=on) at this harness's own address. */
  readonly dataplaneRelay?: boolean;
  /** Sandboxes kept warm by this instance (WARM_POOL_SIZE; default none). */
  readonly warmPoolSize?: number;
  /** execute_code's memory limit and agent client (BrokerSettings). */
  readonly executeCode?: BrokerSettings['executeCode'];
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

export interface BrokerHarness<P extends SandboxProvider> extends AsyncDisposable {
  readonly url: string;
  readonly app: Express;
  readonly server: Server;
  /** The assembled broker behind `app`. */
  readonly broker: Broker;
  readonly provider: P;
  readonly repositories: Repositories;
  readonly coordination: Coordination;
  readonly masterKey: MasterKey;
  readonly vault: KeyVault;
  readonly service: SessionService;
  /** Started unless `loops: false`; `runOnce()` runs a round either way. */
  readonly reaper: LeaseReaper;
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

export function captureLogger(lines: string[], level = 'debug'): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return createLogger({ service: 'broker-test', level, destination: sink });
}

/** `resource` as the broker sees it when it is lent, not given: its close() does nothing. */
export function borrowed<T extends { close(): Promise<void> }>(resource: T): T {
  return new Proxy(resource, {
    get(target, property) {
      if (property === 'close') return async () => {};
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

export async function startBrokerHarness<P extends SandboxProvider>(
  options: BrokerHarnessOptions<P>,
): Promise<BrokerHarness<P>> {
  const logs: string[] = [];
  const logger = captureLogger(logs, options.logLevel ?? 'debug');
  const coordination =
    options.coordination ?? new InProcessCoordination({ keyPrefix: `test-${randomUUID()}` });
  const masterKey = options.masterKey ?? randomMasterKey();
  // Listening first: relay mode hands out the broker's own address, known only now.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let broker: Broker;
  try {
    broker = await assembleBroker(
      {
        logger,
        clock: options.clock ?? Date.now,
        monotonic: options.monotonic,
        database: borrowed(options.database),
        coordination: options.coordination === undefined ? coordination : borrowed(coordination),
        provider: borrowed(options.provider),
        agentExits: options.agentExits,
        masterKey,
        oidc: options.oidc,
      },
      {
        sessions: options.settings,
        rateLimits: options.rateLimits,
        authFailures: options.authFailures,
        http: options.http,
        idempotency: options.idempotency,
        loops: options.loops,
        executeCode: options.executeCode,
        warmPoolSize: options.warmPoolSize,
        ...(options.dataplaneRelay === true
          ? { dataplaneRelay: { publicUrl: `http://127.0.0.1:${port}` } }
          : {}),
      },
    );
  } catch (err) {
    server.close();
    if (options.coordination === undefined) await coordination.close();
    throw err;
  }
  server.on('request', broker.app);
  broker.attach(server);
  const tenantId = `tenant_${randomUUID()}`;
  const { repositories } = broker;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await broker.close();
    })();
    return closing;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    app: broker.app,
    server,
    broker,
    provider: options.provider,
    repositories,
    coordination,
    masterKey,
    vault: broker.vault,
    service: broker.service,
    reaper: broker.reaper,
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
    close,
    [Symbol.asyncDispose]: close,
  };
}
