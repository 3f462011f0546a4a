// The reconciler (docs/lifecycle.md, "Reconciler"): every `intervalMs`, on one
// broker instance at a time (the `reconciler` coordination lock), the start-up
// walk again: the database against what the provider reports. Rows whose
// sandbox vanished become `failed`, agents that died are recorded `suspended`,
// `provisioning` rows of a dead broker instance are failed and destroyed, and
// what the provider holds without a row is destroyed. The start-up round runs
// before the loop (broker-assembly.ts); the loop catches what happens later,
// such as a broker instance killed mid-provisioning while this one runs.
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { ReaperRepository } from '../../store/reaper-repository.js';
import type { WarmPoolRepository } from '../../store/warm-pool-repository.js';
import type { InstancePresence } from './instance-presence.js';
import { reconcileAtStartup, type StartupReconcileReport } from './startup-reconcile.js';
import { acquireLeasedLock } from './leased-lock.js';

export const DEFAULT_RECONCILE_INTERVAL_MS = 60_000;
const ROUND_LOCK = 'reconciler';

export interface ReconcilerDeps {
  readonly repository: ReaperRepository;
  readonly provider: SandboxProvider;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly clock: () => number;
  readonly logger: Logger;
  readonly presence?: Pick<InstancePresence, 'instanceId' | 'isAlive'> | undefined;
  readonly intervalMs?: number | undefined;
  readonly warm?: Pick<WarmPoolRepository, 'listAll' | 'remove'> | undefined;
}

export interface Reconciler {
  /** A round every `intervalMs` (the first one interval from now) until `stop()`. */
  start(): void;
  stop(): Promise<void>;
  /** One round now; undefined when another instance holds the round's lock. */
  runOnce(): Promise<StartupReconcileReport | undefined>;
}

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const intervalMs = deps.intervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<StartupReconcileReport | undefined> | undefined;

  const round = async (): Promise<StartupReconcileReport | undefined> => {
    // Renewed while the round runs (a slow provider), so a killed holder stops no one for long.
    const lock = await acquireLeasedLock(deps.coordination, ROUND_LOCK, (err) =>
      deps.logger.warn({ err }, 'the reconciler round lock lapsed during a round'),
    );
    if (lock === null) return undefined;
    try {
      return await reconcileAtStartup({ ...deps, trigger: 'periodic' });
    } finally {
      await lock.release().catch(() => false);
    }
  };
  const runOnce = (): Promise<StartupReconcileReport | undefined> => {
    inFlight ??= round().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  return {
    start() {
      if (timer !== undefined) return;
      timer = setInterval(() => {
        runOnce().catch((err: unknown) => deps.logger.error({ err }, 'reconciler round failed'));
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await inFlight?.catch(() => undefined);
    },
    runOnce,
  };
}
