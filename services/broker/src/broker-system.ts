// The broker as main.ts starts it: the adapters the configuration names
// (broker-adapters.ts), assembled into the broker (broker-assembly.ts).
import type { Server } from 'node:http';
import type { Express } from 'express';
import type { Logger } from '@sbx/service-kit';
import { openBrokerAdapters } from './broker-adapters.js';
import { assembleBroker, type BrokerSettings } from './broker-assembly.js';
import type { BrokerConfig } from './config.js';
import type { SandboxProvider } from './providers/provider.js';
import type { GeneratedAdminKey } from './broker-admin-key.js';

export interface BrokerSystem {
  readonly app: Express;
  /** What confines user processes on this broker ('none' without bubblewrap). */
  readonly isolation: SandboxProvider['isolation'];
  /** Embedded mode, first start only: makes the admin key; call once listening, print at once. */
  issueAdminKey(): Promise<GeneratedAdminKey | undefined>;
  /** Sandboxes kept warm (0: no pool). */
  readonly warmPoolSize: number;
  /** Serves the broker's WebSocket routes on the server that serves `app`. */
  attach(server: Server): void;
  close(): Promise<void>;
}

/** What the configuration says about the broker beyond its adapters. */
export function brokerSettings(config: BrokerConfig): BrokerSettings {
  return {
    sessions: {
      defaultTokenTtlSeconds: config.tokenTtlSeconds,
      tokenFormat: config.tokenFormat ?? 'jwt',
      idleTimeoutSeconds: config.idleTimeoutSeconds,
      hardTtlSeconds: config.hardTtlSeconds,
    },
    rateLimits: {
      perWindow: {
        negotiate: config.rateLimits.negotiatePerMinute,
        session: config.rateLimits.sessionPerMinute,
      },
      windowMs: 60_000,
    },
    authFailures:
      config.authFailuresPerMinute === undefined
        ? undefined
        : { maxFailures: config.authFailuresPerMinute, windowMs: 60_000 },
    http: config.http,
    metricsToken: config.metricsToken,
    usageCollectIntervalMs: config.usageCollectIntervalMs,
    reconciler: config.reconciler,
    warmPoolSize: config.warmPoolSize,
    reaperIntervalMs: config.reaperIntervalMs,
    dataplaneRelay: config.dataplaneRelay,
    ...(config.executeCodeMemoryMb === undefined
      ? {}
      : { executeCode: { memoryLimitMb: config.executeCodeMemoryMb } }),
    bootstrapApiKey: config.bootstrapApiKey,
    // Embedded mode (no DATABASE_URL): the operator gets an admin key on the first start.
    generatedAdminKeyDir: config.databaseUrl === undefined ? config.dataDir : undefined,
  };
}

/** Configuration in, a ready HTTP app out: the adapters it names, assembled into the broker. */
export async function createBrokerSystem(
  config: BrokerConfig,
  logger: Logger,
  now: () => number,
): Promise<BrokerSystem> {
  const adapters = await openBrokerAdapters(config, logger, now);
  return assembleBroker(adapters, brokerSettings(config));
}
