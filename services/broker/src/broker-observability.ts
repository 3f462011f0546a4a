// The broker's metrics and readiness probes, made for one assembled broker:
// its own prom-client Registry (never the process-wide default), counts read
// from its database on scrape, and what /readyz checks.
import { Registry } from 'prom-client';
import { createPromBrokerMetrics, type PromBrokerMetrics } from './adapters/metrics/prom-broker-metrics.js';
import type { Coordination } from './adapters/redis/coordination.js';
import type { BrokerAdapters } from './broker-adapters.js';
import type { HealthProbe } from './http/observability.js';
import { migrationsAppliedProbe } from './store/migration-status.js';
import { countByState } from './store/state-counts.js';

export interface BrokerObservability {
  readonly metrics: PromBrokerMetrics;
  /**
   * /readyz: the database answers, the coordination store answers (or is away while the
   * broker serves without it: degraded), every migration is applied.
   */
  readonly probes: readonly HealthProbe[];
}

export function brokerObservability(
  adapters: Pick<BrokerAdapters, 'database' | 'coordination' | 'logger'>,
  registry: Registry = new Registry(),
): BrokerObservability {
  const { database, coordination, logger } = adapters;
  const metrics = createPromBrokerMetrics({
    registry,
    stateCounts: () => countByState(database.prisma),
    logger,
  });
  return {
    metrics,
    probes: [
      { name: 'database', check: () => database.ping() },
      { name: 'coordination', check: () => coordinationHealth(coordination) },
      { name: 'migrations', check: migrationsAppliedProbe(database.prisma) },
    ],
  };
}

/** Degraded, not unavailable, while Redis is away: the broker serves on (resilient-coordination.ts). */
async function coordinationHealth(coordination: Coordination): Promise<void | 'degraded'> {
  if (!coordination.degraded) {
    try {
      await coordination.get('health');
      return;
    } catch (err) {
      if (!coordination.degraded) throw err;
    }
  }
  return 'degraded';
}
