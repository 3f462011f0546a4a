/**
 * What a batch of calls costs the database, from Postgres' own counters for the run's
 * database: transactions committed (each one that wrote waits for a WAL flush with
 * synchronous_commit on), and rows inserted + updated per table (`pg_stat_user_tables`), so
 * a per-call write can be named. Backends publish their counters within 10 s of going idle
 * (PGSTAT_IDLE_INTERVAL), hence the settle before each reading; the broker's background
 * loops (leases, reaper) count too and are noise over a batch.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ScratchDatabase } from '../broker/scratch-database.js';

const SETTLE_MS = 11_000;

interface Counters {
  readonly commits: number;
  /** Rows inserted + updated, by table. */
  readonly written: ReadonlyMap<string, number>;
}

export interface WritesPerCall {
  readonly commits: number;
  readonly rows: number;
  /** Tables written at least once per 10 calls, with rows per call, most first. */
  readonly byTable: ReadonlyArray<readonly [table: string, rows: number]>;
}

function read(database: ScratchDatabase): Counters {
  const commits = Number(
    database.sql(`SELECT xact_commit FROM pg_stat_database WHERE datname = '${database.name}'`),
  );
  const written = new Map<string, number>();
  const rows = database.sql(
    `SELECT relname, n_tup_ins + n_tup_upd FROM pg_stat_user_tables WHERE schemaname = 'public'`,
  );
  for (const line of rows.split('\n').filter(Boolean)) {
    const [table, count] = line.split('|');
    if (table !== undefined) written.set(table, Number(count));
  }
  return { commits, written };
}

/** Runs `op` `calls` times in a row between two settled readings; answers the writes per call. */
export async function writesPerCall(
  database: ScratchDatabase,
  calls: number,
  op: () => Promise<unknown>,
): Promise<WritesPerCall> {
  await sleep(SETTLE_MS);
  const before = read(database);
  for (let i = 0; i < calls; i++) await op();
  await sleep(SETTLE_MS);
  const after = read(database);
  const byTable = [...after.written]
    .map(([table, count]) => [table, (count - (before.written.get(table) ?? 0)) / calls] as const)
    .filter(([, rows]) => rows >= 0.1)
    .toSorted((a, b) => b[1] - a[1]);
  return {
    commits: (after.commits - before.commits) / calls,
    rows: byTable.reduce((sum, [, rows]) => sum + rows, 0),
    byTable,
  };
}
