// The lease reaper: every `intervalMs`, on one broker instance at a time (the
// `reaper` coordination lock), moves sandboxes whose timers ran out along
// the lifecycle (docs/lifecycle.md). A round never throws for one sandbox's
// failure; a round that fails as a whole (database or Redis down) is logged
// and the loop tries again next interval.
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { AuditRepository } from '../../store/audit-repository.js';
import type { ReaperRepository } from '../../store/reaper-repository.js';
import { resolveLifecycleTimers, type LifecycleTimerOptions } from './lifecycle-settings.js';
import { reaperPasses } from './reaper-passes.js';
import { runReaperRound, type ReaperReport } from './reaper-round.js';

export type { ReaperReport } from './reaper-round.js';
export type { ReapFailure, StateChangeReport } from './reap-sandbox.js';

export interface LeaseReaperDeps extends LifecycleTimerOptions {
  readonly repository: ReaperRepository;
  readonly audit: Pick<AuditRepository, 'append'>;
  readonly provider: Pick<SandboxProvider, 'stop' | 'destroy'>;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  /** Milliseconds since the epoch; every timer is compared against it. */
  readonly clock: () => number;
  readonly logger: Logger;
  /** Told after each round the loop runs (metrics, tests); not for `runOnce` calls. */
  readonly onRound?: (report: ReaperReport) => void;
}

export interface LeaseReaper {
  /** Runs a round now, then one every `intervalMs` until stop() (its timer keeps the process alive). Idempotent. */
  start(): void;
  /** Ends the loop: no timer is left, and the round under way (cut short) has finished. */
  stop(): Promise<void>;
  /** One round; joins the round under way if there is one. */
  runOnce(): Promise<ReaperReport>;
}

export function createLeaseReaper(deps: LeaseReaperDeps): LeaseReaper {
  const timers = resolveLifecycleTimers(deps);
  const passes = reaperPasses(timers);
  const { logger } = deps;
  let running = false;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<ReaperReport> | undefined;

  const runOnce = (): Promise<ReaperReport> => {
    inFlight ??= runReaperRound({
      ...deps,
      timers,
      passes,
      shouldStop: () => stopping,
    }).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  const tick = async (): Promise<void> => {
    try {
      const report = await runOnce();
      deps.onRound?.(report);
    } catch (err) {
      logger.error({ err }, 'lease reaper round failed; retrying next interval');
    } finally {
      if (running && timer === undefined) schedule(timers.intervalMs);
    }
  };

  const schedule = (delayMs: number): void => {
    timer = setTimeout(() => {
      timer = undefined;
      void tick();
    }, delayMs);
  };

  return {
    start() {
      if (running) return;
      running = true;
      stopping = false;
      if (timer === undefined) schedule(0);
    },
    async stop() {
      running = false;
      stopping = true;
      clearTimeout(timer);
      timer = undefined;
      try {
        await inFlight?.catch(() => undefined);
      } finally {
        stopping = false;
      }
    },
    runOnce,
  };
}
