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

/** Rows in the floor's table: enough that the primary-key lookup is a real index search. */
const FLOOR_ROWS = 10_000;
/** Outside `public`, which the broker's migrations require to be empty on a new database. */
const FLOOR_SCHEMA = 'bench';
export const FLOOR_TABLE = `${FLOOR_SCHEMA}.floor`;

export interface ScratchDatabase {
  readonly name: string;
  readonly url: string;
  /** The id of a row of the floor's table for its lookup. */
  readonly floorRowId: string;
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

/** Creates `sbx_bench_<random>` with the floor's table (`bench.floor`) filled. */
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
  try {
    psql(
      url,
      `CREATE SCHEMA ${FLOOR_SCHEMA};
       CREATE TABLE ${FLOOR_TABLE} (id text PRIMARY KEY, thread_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
       INSERT INTO ${FLOOR_TABLE} (id, thread_id)
         SELECT 'flr_' || md5(i::text), 'thr_' || i FROM generate_series(1, ${FLOOR_ROWS}) AS i;
       ANALYZE ${FLOOR_TABLE};`,
    );
  } catch (err) {
    drop();
    throw err;
  }
  return {
    name,
    url,
    floorRowId: `flr_${psql(url, `SELECT md5('${FLOOR_ROWS / 2}')`)}`,
    sql: (statement) => psql(url, statement),
    drop,
  };
}
