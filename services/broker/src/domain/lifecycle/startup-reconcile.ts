// Start-up reconciliation (docs/lifecycle.md, "After a restart"). Agents may
// have ended with the broker process that ran them (the local provider's die
// with it) while their rows still say `active` or `idle`, with the addresses
// they listened at. Before the broker answers any request, every sandbox of
// its provider is checked against the provider: one whose agent is not running
// is moved to `suspended`, or to `failed` when the provider no longer has it,
// so nobody is handed a dead dataplane and the next attach, heartbeat or
// session read resumes it.
import { isTerminalState, SANDBOX_STATES, type SandboxState } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { ReaperRepository, SandboxCursor } from '../../store/reaper-repository.js';
import { forEachLimited } from './for-each-limited.js';
import { resolveLifecycleTimers, type LifecycleTimerOptions } from './lifecycle-settings.js';
import type { StateChangeReport } from './reap-sandbox.js';
import { reconcileSandbox, type ReconcileFailure } from './reconcile-sandbox.js';

export type { ReconcileFailure } from './reconcile-sandbox.js';

/**
 * The states whose record says something about the agent: the live ones but
 * `provisioning`, which is left to the reaper's provisioning timeout: it may
 * not be suspended, its creator may be alive on another instance, and it is
 * never handed out.
 */
export const RECONCILED_STATES: readonly SandboxState[] = SANDBOX_STATES.filter(
  (state) => !isTerminalState(state) && state !== 'provisioning',
);

export interface StartupReconcileDeps extends Pick<
  LifecycleTimerOptions,
  'providerTimeoutMs' | 'lockTtlMs' | 'batchSize' | 'concurrency'
> {
  readonly repository: Pick<ReaperRepository, 'listPage' | 'isDue' | 'applyStateChange'>;
  readonly provider: Pick<SandboxProvider, 'name' | 'status' | 'stop'>;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly clock: () => number;
  readonly logger: Logger;
}

export interface StartupReconcileReport {
  /** Sandboxes of this provider looked at. */
  readonly checked: number;
  readonly changes: readonly StateChangeReport[];
  /** Skipped because someone held their lock (left to the lease reaper). */
  readonly busy: number;
  /** Left as they were because the provider or the store failed on them. */
  readonly failures: readonly ReconcileFailure[];
}

/** Walks the provider's sandboxes page by page; rejects only when a page cannot be read. */
export async function reconcileAtStartup(deps: StartupReconcileDeps): Promise<StartupReconcileReport> {
  const timers = resolveLifecycleTimers(deps);
  const ctx = { ...deps, timers };
  const filter = { provider: deps.provider.name, states: RECONCILED_STATES };
  const changes: StateChangeReport[] = [];
  const failures: ReconcileFailure[] = [];
  let checked = 0;
  let busy = 0;
  let after: SandboxCursor | undefined;
  for (;;) {
    const page = await deps.repository.listPage(filter, after, timers.batchSize);
    checked += page.length;
    await forEachLimited(page, timers.concurrency, async (sandbox) => {
      const outcome = await reconcileSandbox(ctx, sandbox);
      if (outcome.kind === 'changed') changes.push(outcome.change);
      if (outcome.kind === 'error') failures.push(outcome.failure);
      if (outcome.kind === 'busy') busy += 1;
    });
    const last = page.at(-1);
    if (last === undefined || page.length < timers.batchSize) break;
    after = { createdAt: last.createdAt, id: last.id };
  }
  const report = { checked, changes, busy, failures };
  logReport(deps.logger, report);
  return report;
}

function logReport(logger: Logger, report: StartupReconcileReport): void {
  const summary = {
    checked: report.checked,
    suspended: report.changes.filter((change) => change.to === 'suspended').length,
    failed: report.changes.filter((change) => change.to === 'failed').length,
    busy: report.busy,
    errors: report.failures.length,
  };
  if (summary.busy > 0 || summary.errors > 0)
    logger.warn(
      summary,
      'start-up reconciliation left some sandboxes unchecked; the lease reaper handles them',
    );
  else logger.info(summary, 'start-up reconciliation done');
}
