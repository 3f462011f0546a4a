// Start-up reconciliation (docs/lifecycle.md, "After a restart"). Agents may
// have ended with the broker process that ran them (the local provider's die
// with it) while their rows still say `active` or `idle`, with the addresses
// they listened at. Before the broker answers any request, every sandbox of
// its provider is checked against the provider: one whose agent is not running
// is moved to `suspended`, or to `failed` when the provider no longer has it,
// so nobody is handed a dead dataplane and the next attach, heartbeat or
// session read resumes it. The same walk runs periodically as the reconciler
// (docs/lifecycle.md, "Reconciler"), which also fails the sandboxes a dead
// broker instance left in `provisioning` and destroys what the provider holds
// without a row (orphan-sweep.ts). Sandboxes hosted by another live broker
// instance are left to it (instance-presence.ts).
import { isTerminalState, SANDBOX_STATES, type SandboxState } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { PagedSandbox, ReaperRepository, SandboxCursor } from '../../store/reaper-repository.js';
import { forEachLimited } from './for-each-limited.js';
import type { InstancePresence } from './instance-presence.js';
import { sweepOrphans } from './orphan-sweep.js';
import type { WarmPoolRepository } from '../../store/warm-pool-repository.js';
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
  'providerTimeoutMs' | 'batchSize' | 'concurrency'
> {
  readonly repository: Pick<ReaperRepository, 'listPage' | 'isDue' | 'applyStateChange' | 'statesOf'>;
  readonly provider: Pick<SandboxProvider, 'name' | 'status' | 'stop' | 'destroy' | 'list'>;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly clock: () => number;
  readonly logger: Logger;
  /**
   * Which broker instances live. Without it every sandbox of the provider is this broker's
   * (one broker per database) and `provisioning` rows are left to the reaper's timeout.
   */
  readonly presence?: Pick<InstancePresence, 'instanceId' | 'isAlive'> | undefined;
  /** Default 'startup'. */
  readonly trigger?: 'startup' | 'periodic';
  /** Warm pools' sandboxes (no `sandboxes` row): kept while their host lives (orphan-sweep.ts). */
  readonly warm?: Pick<WarmPoolRepository, 'listAll' | 'remove'> | undefined;
}

export interface StartupReconcileReport {
  /** Sandboxes of this provider looked at. */
  readonly checked: number;
  readonly changes: readonly StateChangeReport[];
  /** Skipped because someone held their lock (left to the lease reaper). */
  readonly busy: number;
  /** Left as they were because the provider or the store failed on them. */
  readonly failures: readonly ReconcileFailure[];
  /** Hosted by another live broker instance: theirs to reconcile. */
  readonly foreign: number;
  /** Held by the provider without a row (or with a `terminated` one), destroyed. */
  readonly orphansDestroyed: readonly string[];
}

/** Walks the provider's sandboxes page by page; rejects only when a page cannot be read. */
export async function reconcileAtStartup(deps: StartupReconcileDeps): Promise<StartupReconcileReport> {
  const timers = resolveLifecycleTimers(deps);
  const ctx = { ...deps, timers, trigger: deps.trigger ?? 'startup' };
  const states =
    deps.presence === undefined ? RECONCILED_STATES : [...RECONCILED_STATES, 'provisioning' as const];
  const filter = { provider: deps.provider.name, states };
  const changes: StateChangeReport[] = [];
  const failures: ReconcileFailure[] = [];
  let checked = 0;
  let busy = 0;
  let foreign = 0;
  let after: SandboxCursor | undefined;
  for (;;) {
    const page = await deps.repository.listPage(filter, after, timers.batchSize);
    checked += page.length;
    await forEachLimited(page, timers.concurrency, async (sandbox) => {
      if (!(await isOurs(deps.presence, sandbox))) {
        foreign += 1;
        return;
      }
      const outcome = await reconcileSandbox(ctx, sandbox);
      if (outcome.kind === 'changed') changes.push(outcome.change);
      if (outcome.kind === 'error') failures.push(outcome.failure);
      if (outcome.kind === 'busy') busy += 1;
    });
    const last = page.at(-1);
    if (last === undefined || page.length < timers.batchSize) break;
    after = { createdAt: last.createdAt, id: last.id };
  }
  const orphans = await sweepOrphans({ ...deps, ...timers }).catch((err: unknown) => {
    deps.logger.warn({ err }, 'could not compare the provider with the database');
    return { destroyed: [], failures: [] };
  });
  const report = { checked, changes, busy, failures, foreign, orphansDestroyed: orphans.destroyed };
  logReport(deps.logger, report);
  return report;
}

/**
 * Whether this instance may reconcile the sandbox: yes when it hosts it or its host is
 * dead. A `provisioning` one only when its creator is another instance that died (this
 * instance's own are being created right now; one without a host is the reaper's).
 */
async function isOurs(
  presence: StartupReconcileDeps['presence'],
  sandbox: Pick<PagedSandbox, 'state' | 'hostInstance'>,
): Promise<boolean> {
  const host = sandbox.hostInstance;
  if (presence === undefined) return sandbox.state !== 'provisioning';
  if (sandbox.state === 'provisioning')
    return host !== null && host !== presence.instanceId && !(await presence.isAlive(host));
  return host === null || !(await presence.isAlive(host));
}

function logReport(logger: Logger, report: StartupReconcileReport): void {
  const summary = {
    checked: report.checked,
    suspended: report.changes.filter((change) => change.to === 'suspended').length,
    failed: report.changes.filter((change) => change.to === 'failed').length,
    busy: report.busy,
    errors: report.failures.length,
    foreign: report.foreign,
    orphans_destroyed: report.orphansDestroyed.length,
  };
  if (summary.busy > 0 || summary.errors > 0)
    logger.warn(
      summary,
      'reconciliation left some sandboxes unchecked; the lease reaper or the next round handles them',
    );
  else logger.info(summary, 'reconciliation done');
}
