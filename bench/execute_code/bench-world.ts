/**
 * What the execute_code measurements run against: one broker process as operators run it
 * (bench/broker: throwaway Postgres database, a Redis database of the run's own, the local
 * provider with bubblewrap), configured as an operator would for a load run — rate limits
 * raised by environment, execute_code caps raised in the tenant policy through the admin
 * API — and an API key of an agent principal, the caller execute_code is for.
 */
import {
  BOOTSTRAP_PRINCIPAL_ID,
  BOOTSTRAP_TENANT_ID,
  startBrokerProcess,
  type BrokerProcess,
} from '../broker/broker-process.js';
import { prepareRedisScratch } from '../broker/rate-limit-headroom.js';
import { createScratchDatabase, type ScratchDatabase } from '../broker/scratch-database.js';
import { createAgentKey, putTenantPolicy } from './tool-client.js';

/** The most the config and the policy schema allow: no call of the run is ever refused. */
const RATE_LIMIT_PER_MINUTE = '1000000';
const EXECUTE_CODE_CAP = 100_000_000;
/** execute-code-service.ts DEFAULT_MEMORY_LIMIT_MB, capped by the tenant's max_memory_mb. */
const BROKER_MEMORY_LIMIT_MB = 512;

export interface ExecuteCodeWorld {
  readonly broker: BrokerProcess;
  readonly database: ScratchDatabase;
  /** API key of principal type agent with exec:sandbox + write:sandbox. */
  readonly agentKey: string;
  /** The memory limit the broker sends with each run, for the floor to send the same. */
  readonly memoryLimitMb: number;
  /** Stops everything, drops the database; returns the agents the broker left behind. */
  close(): Promise<number>;
}

export async function openExecuteCodeWorld(): Promise<ExecuteCodeWorld> {
  const database = createScratchDatabase();
  const redis = prepareRedisScratch(BOOTSTRAP_TENANT_ID, BOOTSTRAP_PRINCIPAL_ID);
  let broker: BrokerProcess | undefined;
  const close = async (): Promise<number> => {
    try {
      return (await broker?.stop()) ?? 0;
    } finally {
      database.drop();
      redis.clear();
    }
  };
  try {
    broker = await startBrokerProcess({
      databaseUrl: database.url,
      redisUrl: redis.url,
      env: {
        RATE_LIMIT_NEGOTIATE_PER_MINUTE: RATE_LIMIT_PER_MINUTE,
        RATE_LIMIT_SESSION_PER_MINUTE: RATE_LIMIT_PER_MINUTE,
      },
    });
    const policy = await putTenantPolicy(broker.url, broker.apiKey, BOOTSTRAP_TENANT_ID, {
      execute_code_daily_cap: EXECUTE_CODE_CAP,
      execute_code_agent_hourly_cap: EXECUTE_CODE_CAP,
    });
    const agentKey = await createAgentKey(broker.url, broker.apiKey, BOOTSTRAP_TENANT_ID, 'bench-agent');
    const memoryLimitMb = Math.min(BROKER_MEMORY_LIMIT_MB, policy.max_memory_mb);
    return { broker, database, agentKey, memoryLimitMb, close };
  } catch (err) {
    await close();
    throw err;
  }
}
