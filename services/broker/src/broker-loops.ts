// The broker's background loops: the lease reaper (docs/lifecycle.md) and the
// purge of expired idempotency records.
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from './adapters/redis/coordination.js';
import { createLeaseReaper, type LeaseReaper, type ReaperReport } from './domain/lifecycle/lease-reaper.js';
import type { BrokerMetrics } from './domain/metrics/broker-metrics.js';
import type { SandboxProvider } from './providers/provider.js';
import type { Repositories } from './store/index.js';
import type { ReaperRepository } from './store/reaper-repository.js';

export const IDEMPOTENCY_PURGE_MS = 10 * 60_000;

export interface BrokerLoopsDeps {
  readonly repositories: Pick<Repositories, 'audit' | 'idempotency'>;
  readonly reaperRepository: ReaperRepository;
  readonly provider: SandboxProvider;
  readonly coordination: Coordination;
  readonly clock: () => number;
  readonly logger: Logger;
  /** What a heartbeat extends a lease by. */
  readonly idleTimeoutMs: number;
  /** False: the reaper is built but not started, and nothing is purged (tests that drive them). */
  readonly start: boolean;
  /** Told what each round of the reaper loop did. */
  readonly metrics?: Pick<BrokerMetrics, 'reaped'> | undefined;
}

function countRound(metrics: Pick<BrokerMetrics, 'reaped'>, report: ReaperReport): void {
  for (const change of report.changes) metrics.reaped(change.to, change.reason, 'ok');
  for (const failure of report.failures) metrics.reaped(failure.to, failure.reason, 'failed');
}

export interface BrokerLoops {
  /** Started unless the loops are off; `runOnce()` runs a round either way. */
  readonly reaper: LeaseReaper;
  /** Ends both loops; the reaper round under way has finished. */
  stop(): Promise<void>;
}

export function startBrokerLoops(deps: BrokerLoopsDeps): BrokerLoops {
  const { repositories, logger } = deps;
  const reaper = createLeaseReaper({
    repository: deps.reaperRepository,
    audit: repositories.audit,
    provider: deps.provider,
    coordination: deps.coordination,
    clock: deps.clock,
    logger,
    idleTimeoutMs: deps.idleTimeoutMs,
    ...(deps.metrics === undefined ? {} : { onRound: countRound.bind(undefined, deps.metrics) }),
  });
  let purge: NodeJS.Timeout | undefined;
  if (deps.start) {
    reaper.start();
    purge = setInterval(() => {
      repositories.idempotency
        .purgeExpired()
        .catch((err: unknown) => logger.warn({ err }, 'idempotency purge failed'));
    }, IDEMPOTENCY_PURGE_MS);
    purge.unref();
  }
  return {
    reaper,
    async stop() {
      clearInterval(purge);
      await reaper.stop();
    },
  };
}
