/**
 * A throwaway Postgres database for one run, created and dropped with psql (bench/ does
 * not depend on a driver). It is dropped at the end, on an error, and at the latest when
 * the runner exits (Ctrl-C included); only a SIGKILL of the runner can leave it.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** Server-level URL without a database name; `BENCH_POSTGRES_URL` overrides it. */
const SERVER_URL = (process.env['BENCH_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432').replace(
  /\/$/,
  '',
);

export interface ScratchDatabase {
  readonly name: string;
  readonly url: string;
  /** Runs SQL in this database; returns psql's unaligned output. */
  sql(statement: string): string;
  drop(): void;
}

function psql(url: string, statement: string): string {
  const run = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', statement], {
    encoding: 'utf8',
  });
  if (run.error !== undefined) throw run.error;
  if (run.status !== 0) throw new Error(`psql failed (${run.status}): ${run.stderr.trim()}`);
  return run.stdout.trim();
}

/** Creates `sbx_bench_<random>` (empty: the broker migrates it on start). */
export function createScratchDatabase(): ScratchDatabase {
  const name = `sbx_bench_${randomBytes(6).toString('hex')}`;
  const url = `${SERVER_URL}/${name}`;
  psql(`${SERVER_URL}/postgres`, `CREATE DATABASE ${name}`);
  let dropped = false;
  const drop = (): void => {
    if (dropped) return;
    dropped = true;
    process.off('exit', drop);
    // FORCE ends connections a killed broker or floor server may have left behind.
    psql(`${SERVER_URL}/postgres`, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
  process.once('exit', drop);
  return { name, url, sql: (statement) => psql(url, statement), drop };
}
