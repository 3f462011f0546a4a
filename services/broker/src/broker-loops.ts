// The broker's background loops: the lease reaper and the reconciler
// (docs/lifecycle.md), the purge of expired idempotency records and the agents'
// usage collector (docs/admin.md).
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from './adapters/redis/coordination.js';
import { createClockJumpGuard } from './domain/lifecycle/clock-jump.js';
import { createLeaseReaper, type LeaseReaper, type ReaperReport } from './domain/lifecycle/lease-reaper.js';
import { resolveLifecycleTimers } from './domain/lifecycle/lifecycle-settings.js';
import type { BrokerMetrics } from './domain/metrics/broker-metrics.js';
import { createUsageCollector, type UsageCollector } from './domain/admin/usage-collector.js';
import type { InstancePresence } from './domain/lifecycle/instance-presence.js';
import { createReconciler, type Reconciler } from './domain/lifecycle/reconciler.js';
import type { SandboxProvider } from './providers/provider.js';
import type { Repositories } from './store/index.js';
import type { ReaperRepository } from './store/reaper-repository.js';
import type { WarmPoolRepository } from './store/warm-pool-repository.js';

export const IDEMPOTENCY_PURGE_MS = 10 * 60_000;

export interface BrokerLoopsDeps {
  readonly repositories: Pick<
    Repositories,
    'audit' | 'idempotency' | 'usageCounters' | 'invocations' | 'executeCodeQuota'
  >;
  readonly reaperRepository: ReaperRepository;
  readonly provider: SandboxProvider;
  readonly coordination: Coordination;
  readonly clock: () => number;
  /**
   * A clock that never jumps (performance.now). When given, the lease reaper holds back
   * forward jumps of `clock` (clock-jump.ts); tests that move `clock` to make the reaper
   * act leave it out.
   */
  readonly monotonic?: (() => number) | undefined;
  readonly logger: Logger;
  /** What a heartbeat extends a lease by. */
  readonly idleTimeoutMs: number;
  /** False: the reaper is built but not started, and nothing is purged (tests that drive them). */
  readonly start: boolean;
  /** Told what each round of the reaper loop did. */
  readonly metrics?: Pick<BrokerMetrics, 'reaped'> | undefined;
  /** Between two collections of the agents' usage counters; default 60 s. */
  readonly usageCollectIntervalMs?: number | undefined;
  /** Which broker instances live; the reconciler leaves the sandboxes of the others alone. */
  readonly presence?: InstancePresence | undefined;
  /** Between two lease reaper rounds; default 15 s. */
  readonly reaperIntervalMs?: number | undefined;
  /** Between two reconciler rounds; default 60 s. */
  readonly reconcileIntervalMs?: number | undefined;
  /** Warm pools' sandboxes, which the reconciler must not take for orphans. */
  readonly warm?: Pick<WarmPoolRepository, 'listAll' | 'remove'> | undefined;
}

function countRound(metrics: Pick<BrokerMetrics, 'reaped'>, report: ReaperReport): void {
  for (const change of report.changes) metrics.reaped(change.to, change.reason, 'ok');
  for (const failure of report.failures) metrics.reaped(failure.to, failure.reason, 'failed');
}

export interface BrokerLoops {
  /** Started unless the loops are off; `runOnce()` runs a round either way. */
  readonly reaper: LeaseReaper;
  /** Started with the reaper; `collectOnce()` runs a round either way. */
  readonly usage: UsageCollector;
  /** Started with the reaper; `runOnce()` runs a round either way. */
  readonly reconciler: Reconciler;
  /** Ends the loops; the reaper round under way has finished, a last usage round has run. */
  stop(): Promise<void>;
}

export function startBrokerLoops(deps: BrokerLoopsDeps): BrokerLoops {
  const { repositories, logger } = deps;
  const usage = createUsageCollector({
    repository: repositories.usageCounters,
    provider: deps.provider,
    clock: deps.clock,
    logger,
    intervalMs: deps.usageCollectIntervalMs,
  });
  const reaper = createLeaseReaper({
    repository: deps.reaperRepository,
    audit: repositories.audit,
    // A sandbox the reaper suspends or terminates has its agent's last counters collected first.
    provider: usage.beforeEnding(deps.provider),
    coordination: deps.coordination,
    clock: reaperClock(deps),
    logger,
    idleTimeoutMs: deps.idleTimeoutMs,
    ...(deps.reaperIntervalMs === undefined ? {} : { intervalMs: deps.reaperIntervalMs }),
    ...(deps.metrics === undefined ? {} : { onRound: countRound.bind(undefined, deps.metrics) }),
  });
  const reconciler = createReconciler({
    repository: deps.reaperRepository,
    provider: deps.provider,
    coordination: deps.coordination,
    clock: deps.clock,
    logger,
    presence: deps.presence,
    warm: deps.warm,
    intervalMs: deps.reconcileIntervalMs,
  });
  let purge: NodeJS.Timeout | undefined;
  if (deps.start) {
    reaper.start();
    usage.start();
    reconciler.start();
    purge = setInterval(() => void purgeRound(deps), IDEMPOTENCY_PURGE_MS);
    purge.unref();
  }
  return {
    reaper,
    usage,
    reconciler,
    async stop() {
      clearInterval(purge);
      await Promise.all([reaper.stop(), reconciler.stop()]);
      // Before the provider closes: what the agents counted since the last round is kept.
      await usage.stop();
    },
  };
}

/** The reaper's clock: the broker's, with forward jumps held back when a monotonic clock is given. */
function reaperClock(deps: BrokerLoopsDeps): () => number {
  if (deps.monotonic === undefined) return deps.clock;
  const timers = resolveLifecycleTimers({ idleTimeoutMs: deps.idleTimeoutMs });
  return createClockJumpGuard({
    clock: deps.clock,
    monotonic: deps.monotonic,
    // A lease granted just before the jump, then its idle period before suspension.
    holdMs: timers.idleTimeoutMs + timers.suspendAfterIdleMs,
    logger: deps.logger,
  }).now;
}

/** Quota windows older than this can never be taken from again (the longest window is a day). */
const QUOTA_WINDOW_KEPT_MS = 2 * 86_400_000;

/**
 * What expires: idempotency records, execute_code invocations past their retention
 * (docs/execute-code.md "Audit") and quota windows that have ended. Each on its own,
 * so one failing does not keep the others.
 */
export async function purgeRound(
  deps: Pick<BrokerLoopsDeps, 'repositories' | 'clock' | 'logger'>,
): Promise<void> {
  const { repositories, logger } = deps;
  const now = deps.clock();
  await Promise.all([
    repositories.idempotency
      .purgeExpired()
      .catch((err: unknown) => logger.warn({ err }, 'idempotency purge failed')),
    repositories.invocations
      .purgeExpired(new Date(now))
      .then((purged) => {
        if (purged > 0) logger.info({ purged }, 'expired execute_code invocations purged');
        return purged;
      })
      .catch((err: unknown) => logger.warn({ err }, 'invocation purge failed')),
    repositories.executeCodeQuota
      .purgeBefore(new Date(now - QUOTA_WINDOW_KEPT_MS))
      .catch((err: unknown) => logger.warn({ err }, 'execute_code quota purge failed')),
  ]);
}
