/**
 * What the langgraph measurements run against: a broker process as operators run it
 * (bubblewrap, Postgres, Redis), with room for the cold-thread sandboxes, and a broker
 * client with its bootstrap key.
 */
import { BrokerClient } from '@sbx/client';
import {
  BOOTSTRAP_PRINCIPAL_ID,
  BOOTSTRAP_TENANT_ID,
  startBrokerProcess,
  type BrokerProcess,
} from '../broker/broker-process.js';
import { BENCH_SANDBOX_LIMITS } from '../broker/bench-limits.js';
import { prepareRedisScratch } from '../broker/rate-limit-headroom.js';
import { createScratchDatabase } from '../broker/scratch-database.js';

/**
 * Every cold-thread sample leaves a sandbox until it is released; the default policy allows 10.
 * Workspace images of the bench's size (bench-limits.ts), which the disk budget admits.
 */
const MAX_SANDBOXES = 200;

export interface LanggraphWorld {
  readonly broker: BrokerProcess;
  readonly client: BrokerClient;
  readonly brokerOptions: { readonly baseUrl: string; readonly apiKey: string };
  close(): Promise<void>;
}

export async function openLanggraphWorld(): Promise<LanggraphWorld> {
  const database = createScratchDatabase();
  const redis = prepareRedisScratch(BOOTSTRAP_TENANT_ID, BOOTSTRAP_PRINCIPAL_ID);
  let broker: BrokerProcess | undefined;
  const close = async (): Promise<void> => {
    try {
      await broker?.stop();
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
    const brokerOptions = { baseUrl: broker.url, apiKey: broker.apiKey };
    return { broker, client: new BrokerClient(brokerOptions), brokerOptions, close };
  } catch (err) {
    await close();
    throw err;
  }
}
