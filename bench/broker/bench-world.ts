/**
 * What every broker measurement runs against, set up once per run (the broker bundles the
 * agent and migrates a fresh database on start, seconds that no measurement needs twice):
 * a throwaway Postgres database, a Redis database of the run's own, the broker, and the
 * floor server on the same database.
 */
import {
  BOOTSTRAP_PRINCIPAL_ID,
  BOOTSTRAP_TENANT_ID,
  startBrokerProcess,
  type BrokerProcess,
} from './broker-process.js';
import { BENCH_SANDBOX_LIMITS } from './bench-limits.js';
import { startFloorProcess, type FloorProcess } from './floor-process.js';
import { prepareRedisScratch, type RedisScratch } from './rate-limit-headroom.js';
import { createScratchDatabase, type ScratchDatabase } from './scratch-database.js';

/**
 * Live sandboxes the bench tenant may hold (the default policy allows 10); the cold
 * `ensure` levels create up to 64 at once. Set as an operator would, in tenant_policies, with
 * the bench's workspace size (bench-limits.ts: the disk budget admits about six 10 GiB images here).
 */
const MAX_SANDBOXES = 500;

export interface BenchWorld {
  readonly broker: BrokerProcess;
  readonly floor: FloorProcess;
  readonly database: ScratchDatabase;
  readonly redis: RedisScratch;
  /** Stops everything, drops the database; returns the agents the broker left behind. */
  close(): Promise<number>;
}

export async function openBenchWorld(): Promise<BenchWorld> {
  const database = createScratchDatabase();
  const redis = prepareRedisScratch(BOOTSTRAP_TENANT_ID, BOOTSTRAP_PRINCIPAL_ID);
  let broker: BrokerProcess | undefined;
  let floor: FloorProcess | undefined;
  const close = async (): Promise<number> => {
    try {
      await floor?.stop();
      return (await broker?.stop()) ?? 0;
    } finally {
      database.drop();
      redis.clear();
    }
  };
  try {
    broker = await startBrokerProcess({ databaseUrl: database.url, redisUrl: redis.url });
    database.sql(
      `INSERT INTO tenant_policies (tenant_id, max_sandboxes, max_disk_mb)
       VALUES ('${BOOTSTRAP_TENANT_ID}', ${MAX_SANDBOXES}, ${BENCH_SANDBOX_LIMITS.max_disk_mb})`,
    );
    floor = await startFloorProcess(database.url);
    return { broker, floor, database, redis, close };
  } catch (err) {
    await close();
    throw err;
  }
}
