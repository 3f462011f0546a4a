/**
 * What one call costs the database, from Postgres' own counters for the run's database
 * (`pg_stat_database`): transactions committed (one that wrote waits for a WAL flush, with
 * synchronous_commit on) and rows inserted and updated. An idle backend publishes its
 * counters within 10 s (PGSTAT_IDLE_INTERVAL when its last flush was under 1 s ago), hence
 * the settle before each reading. The broker's background loops (leases, reaper) count too;
 * over a batch of calls they are noise.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ScratchDatabase } from '../broker/scratch-database.js';

export interface DatabaseActivity {
  readonly commits: number;
  readonly inserted: number;
  readonly updated: number;
}

const SETTLE_MS = 11_000;

function read(database: ScratchDatabase): DatabaseActivity {
  const row = database.sql(
    `SELECT xact_commit, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = '${database.name}'`,
  );
  const [commits, inserted, updated] = row.split('|').map(Number);
  return { commits: commits ?? 0, inserted: inserted ?? 0, updated: updated ?? 0 };
}

/** Runs each batch's `op` `calls` times in a row, one batch after another; answers the activity per call. */
export async function activityPerCall<K extends string>(
  database: ScratchDatabase,
  calls: number,
  batches: Readonly<Record<K, () => Promise<unknown>>>,
): Promise<Record<K, DatabaseActivity>> {
  const perCall = {} as Record<K, DatabaseActivity>;
  await sleep(SETTLE_MS);
  let before = read(database);
  for (const [name, op] of Object.entries(batches) as Array<[K, () => Promise<unknown>]>) {
    for (let i = 0; i < calls; i++) await op();
    await sleep(SETTLE_MS);
    const after = read(database);
    perCall[name] = {
      commits: (after.commits - before.commits) / calls,
      inserted: (after.inserted - before.inserted) / calls,
      updated: (after.updated - before.updated) / calls,
    };
    before = after;
  }
  return perCall;
}
