// The reconciler's other direction (docs/lifecycle.md, "Reconciler"): sandboxes
// the provider holds that the database does not account for. A row is always
// written before the provider is asked to create (a warm sandbox's once made, under its
// lock, which the sweep takes too), so a sandbox without one was
// left by a database that was reset or a row deleted by hand; one whose row is
// `terminated` lost its destroy (a crash, a provider outage). Both hold
// resources nobody would ever release: they are destroyed. `failed` ones are
// kept: the failed-retention pass destroys them once their owner could look.
import type { SandboxState } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { SandboxProvider } from '../../providers/provider.js';
import type { ReaperRepository } from '../../store/reaper-repository.js';
import type { WarmPoolRepository } from '../../store/warm-pool-repository.js';
import type { InstancePresence } from './instance-presence.js';
import { forEachLimited } from './for-each-limited.js';
import { sandboxLockKey } from './sandbox-lock.js';
import { withDeadline } from './with-deadline.js';
import { acquireLeasedLock } from './leased-lock.js';

export interface OrphanSweepDeps {
  readonly repository: Pick<ReaperRepository, 'statesOf'>;
  readonly provider: Pick<SandboxProvider, 'name' | 'list' | 'destroy'>;
  readonly coordination: Pick<Coordination, 'acquireLock'>;
  readonly logger: Logger;
  readonly providerTimeoutMs: number;
  readonly concurrency: number;
  /** Warm pools' sandboxes have no row in `sandboxes` but are not orphans while their host lives. */
  readonly warm?: Pick<WarmPoolRepository, 'listAll' | 'remove'> | undefined;
  readonly presence?: Pick<InstancePresence, 'isAlive'> | undefined;
}

export interface OrphanSweepReport {
  /** Destroyed: no row, or a `terminated` row. */
  readonly destroyed: readonly string[];
  readonly failures: readonly string[];
}

const ORPHAN_ROW_STATES: ReadonlySet<SandboxState> = new Set(['terminated']);

/**
 * The warm sandboxes whose host instance lives. Those of a dead instance lose their row
 * here (a local agent died with its broker; nobody else may claim them) and are then
 * destroyed as orphans.
 */
async function warmOfLiveHosts(deps: OrphanSweepDeps): Promise<Set<string>> {
  const rows = (await deps.warm?.listAll(deps.provider.name)) ?? [];
  const live = new Set<string>();
  // One presence read per host, not per warm sandbox: a pool is many rows of one instance.
  const hosts = new Map<string, Promise<boolean>>();
  const alive = (host: string): Promise<boolean> => {
    if (deps.presence === undefined) return Promise.resolve(true);
    const known = hosts.get(host) ?? deps.presence.isAlive(host);
    hosts.set(host, known);
    return known;
  };
  for (const row of rows) {
    if (await alive(row.hostInstance)) live.add(row.id);
    else await deps.warm?.remove(row.id);
  }
  return live;
}

async function stillOrphaned(deps: OrphanSweepDeps, id: string): Promise<boolean> {
  const state = (await deps.repository.statesOf([id])).get(id);
  if (state !== undefined) return ORPHAN_ROW_STATES.has(state);
  return !(await warmOfLiveHosts(deps)).has(id);
}

export async function sweepOrphans(deps: OrphanSweepDeps): Promise<OrphanSweepReport> {
  const held = await withDeadline(deps.provider.list(), deps.providerTimeoutMs, 'provider list');
  const warm = await warmOfLiveHosts(deps);
  const states = await deps.repository.statesOf(held);
  const orphans = held.filter((id) => {
    const state = states.get(id);
    return (state === undefined && !warm.has(id)) || (state !== undefined && ORPHAN_ROW_STATES.has(state));
  });
  const destroyed: string[] = [];
  const failures: string[] = [];
  await forEachLimited(orphans, deps.concurrency, async (id) => {
    const lock = await acquireLeasedLock(deps.coordination, sandboxLockKey(id)).catch(() => null);
    if (lock === null) return;
    try {
      // Read again under the lock: a warm sandbox gets its row once made, under this lock
      // (warm-pool.ts), maybe since the states above were read.
      if (!(await stillOrphaned(deps, id))) return;
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
