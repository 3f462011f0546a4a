// The broker's adapters: what it talks to outside its own code (the database,
// the coordination store, the sandbox provider, the OIDC issuer, the master
// key, the clock and the log), opened from the configuration. assembleBroker
// (broker-assembly.ts) wires the broker from them; tests hand it their own.
import { performance } from 'node:perf_hooks';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from './adapters/redis/coordination.js';
import { createCoordination } from './adapters/redis/create-coordination.js';
import type { BrokerConfig } from './config.js';
import { createOidcVerifier, type OidcVerifier } from './domain/auth/oidc-verifier.js';
import { loadMasterKey, type MasterKey } from './domain/keys/master-key.js';
import { openProvider } from './providers/open-provider.js';
import type { AgentExitListener, SandboxProvider } from './providers/provider.js';
import { openDatabase, type Database } from './store/database.js';

export interface BrokerAdapters {
  readonly logger: Logger;
  /** Milliseconds since the epoch: leases, tokens, timers, uptime. */
  readonly clock: () => number;
  /**
   * A clock that never jumps (performance.now), next to which forward jumps of `clock` are
   * seen and held back by the lease reaper (docs/lifecycle.md "Clock jumps"). Tests that
   * move `clock` to make the reaper act leave it out.
   */
  readonly monotonic?: (() => number) | undefined;
  /** Closed by the assembled broker's close(). */
  readonly database: Database;
  /** Closed by the assembled broker's close(). */
  readonly coordination: Coordination;
  /** Closed by the assembled broker's close(). */
  readonly provider: SandboxProvider;
  /** Where `provider` reports agents that ended unasked; the assembly connects its handler here. */
  readonly agentExits?: AgentExitRelay | undefined;
  /** Seals the sandboxes' signing keys and idempotent answers; brokers sharing a database share it. */
  readonly masterKey: MasterKey;
  /** Verifies OIDC access tokens next to API keys, when an issuer is configured. */
  readonly oidc?: OidcVerifier | undefined;
}

/**
 * The provider is opened before the handler that records agent exits exists (the
 * handler needs the database the assembly wires): it reports to this relay, which
 * passes exits on once connected and holds the ones reported before.
 */
export interface AgentExitRelay {
  /** For the provider's `onAgentExit`. */
  readonly listener: AgentExitListener;
  connect(target: AgentExitListener): void;
}

export function agentExitRelay(): AgentExitRelay {
  let target: AgentExitListener | undefined;
  const early: Parameters<AgentExitListener>[] = [];
  return {
    listener: (...exit) => {
      if (target === undefined) early.push(exit);
      else target(...exit);
    },
    connect(listener) {
      target = listener;
      for (const exit of early.splice(0)) listener(...exit);
    },
  };
}

/** Opens every adapter the configuration names; the assembled broker closes them. */
export async function openBrokerAdapters(
  config: BrokerConfig,
  logger: Logger,
  clock: () => number,
): Promise<BrokerAdapters> {
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    migrate: true,
    maxConnections: config.databasePoolSize ?? 10,
  });
  if (database.appliedMigrations.length > 0)
    logger.info({ migrations: database.appliedMigrations }, 'applied migrations');
  const coordination = await createCoordination({
    redisUrl: config.redisUrl,
    keyPrefix: config.redisKeyPrefix ?? 'sbx',
    redisTimeoutMs: config.redisCommandTimeoutMs,
    onError: (err) => logger.warn({ err }, 'coordination error'),
    logger,
  });
  if (coordination.warning !== undefined) logger.warn(coordination.warning);
  const masterKey = await loadMasterKey({ masterKey: config.masterKey, dataDir: config.dataDir });
  const agentExits = agentExitRelay();
  const provider = await openProvider(config, {
    logger,
    onAgentExit: agentExits.listener,
    introspectionUrl: config.tokenFormat === 'opaque' ? introspectionUrl(config) : undefined,
  });
  const oidc =
    config.oidc === undefined
      ? undefined
      : createOidcVerifier({
          issuer: config.oidc.issuer,
          audience: config.oidc.audience,
          jwksUri: config.oidc.jwksUrl,
        });
  return {
    logger,
    clock,
    monotonic: monotonicNow,
    database,
    coordination,
    provider,
    agentExits,
    masterKey,
    oidc,
  };
}

/** A clock that never jumps: the reaper measures wall-clock jumps against it. */
function monotonicNow(): number {
  return performance.now();
}

/** Where the broker's agents reach POST /oauth/introspect: its public URL, else its own listener. */
function introspectionUrl(config: BrokerConfig): string {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const base = config.publicUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
  return new URL('oauth/introspect', `${base.replace(/\/$/, '')}/`).href;
}
