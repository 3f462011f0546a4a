// The reconciler's other direction (docs/lifecycle.md, "Reconciler"): sandboxes
// the provider holds that the database does not account for. A row is always
// written before the provider is asked to create, so a sandbox without one was
// left by a database that was reset or a row deleted by hand; one whose row is
// `terminated` lost its destroy (a crash, a provider outage). Both hold
// resources nobody would ever release: they are destroyed. `failed` ones are
// kept: the failed-retention pass destroys them once their owner could look.
import type { SandboxState } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { ReaperRepository } from '../../store/reaper-repository.js';
import { forEachLimited } from './for-each-limited.js';
import { sandboxLockKey } from './sandbox-lock.js';
import { withDeadline } from './with-deadline.js';

export interface OrphanSweepDeps {
  readonly repository: Pick<ReaperRepository, 'statesOf'>;
  readonly provider: Pick<SandboxProvider, 'list' | 'destroy'>;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly logger: Logger;
  readonly providerTimeoutMs: number;
  readonly lockTtlMs: number;
  readonly concurrency: number;
}

export interface OrphanSweepReport {
  /** Destroyed: no row, or a `terminated` row. */
  readonly destroyed: readonly string[];
  readonly failures: readonly string[];
}

const ORPHAN_ROW_STATES: ReadonlySet<SandboxState> = new Set(['terminated']);

export async function sweepOrphans(deps: OrphanSweepDeps): Promise<OrphanSweepReport> {
  const held = await withDeadline(deps.provider.list(), deps.providerTimeoutMs, 'provider list');
  const states = await deps.repository.statesOf(held);
  const orphans = held.filter((id) => {
    const state = states.get(id);
    return state === undefined || ORPHAN_ROW_STATES.has(state);
  });
  const destroyed: string[] = [];
  const failures: string[] = [];
  await forEachLimited(orphans, deps.concurrency, async (id) => {
    const lock = await deps.coordination.acquireLock(sandboxLockKey(id), deps.lockTtlMs).catch(() => null);
    if (lock === null) return;
    try {
      await withDeadline(deps.provider.destroy(id), deps.providerTimeoutMs, 'provider destroy');
      destroyed.push(id);
      deps.logger.warn(
        { sandbox_id: id, recorded_state: states.get(id) ?? null },
        'destroyed a sandbox the database does not account for',
      );
    } catch (err) {
      failures.push(id);
      deps.logger.warn({ err, sandbox_id: id }, 'could not destroy an orphaned sandbox');
    } finally {
      await lock.release().catch(() => false);
    }
  });
  return { destroyed, failures };
}
