/**
 * What the relay measurements run against: one broker process as bench/broker starts it
 * (throwaway Postgres database, a Redis database of the run's own, the local provider with
 * bubblewrap, `LOG_LEVEL=info`), rate limits raised by environment as an operator would for
 * a load run, an API key of an agent principal holding every data-plane caller scope, and
 * one sandbox reachable both ways: created through `POST /v1/sandboxes {thread_id}` (the
 * relay addresses it by id) and negotiated through `POST /threads/{thread}/sandbox` (direct
 * access: the agent's URL and a capability token with fs:rw + process).
 */
import { randomBytes } from 'node:crypto';
import {
  BOOTSTRAP_PRINCIPAL_ID,
  BOOTSTRAP_TENANT_ID,
  startBrokerProcess,
  type BrokerProcess,
} from '../broker/broker-process.js';
import { prepareRedisScratch } from '../broker/rate-limit-headroom.js';
import { createScratchDatabase, type ScratchDatabase } from '../broker/scratch-database.js';
import {
  createKey,
  createSandbox,
  deleteSandbox,
  negotiateDirect,
  type DirectAccess,
} from './relay-client.js';

/** The most the config allows: no call of the run is ever refused. */
const RATE_LIMIT_PER_MINUTE = '1000000';
const CALLER_SCOPES = ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'] as const;

export interface RelayWorld {
  readonly broker: BrokerProcess;
  readonly database: ScratchDatabase;
  /** API key of principal type agent with read/write/exec/attach:sandbox. */
  readonly key: string;
  /** The sandbox both paths reach: its resource id (relay) … */
  readonly sandboxId: string;
  /** … and its agent with a token negotiated on the thread route (direct). */
  direct(): Promise<DirectAccess>;
  /** Deletes the sandbox, stops everything, drops the database; returns agents left behind. */
  close(): Promise<number>;
}

export async function openRelayWorld(): Promise<RelayWorld> {
  const database = createScratchDatabase();
  const redis = prepareRedisScratch(BOOTSTRAP_TENANT_ID, BOOTSTRAP_PRINCIPAL_ID);
  let broker: BrokerProcess | undefined;
  let cleanup = async (): Promise<void> => {};
  const close = async (): Promise<number> => {
    try {
      await cleanup().catch(() => undefined);
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
    const url = broker.url;
    const key = await createKey(url, broker.apiKey, {
      tenant_id: BOOTSTRAP_TENANT_ID,
      principal_id: 'bench-relay',
      principal_type: 'agent',
      scopes: [...CALLER_SCOPES],
      name: 'bench relay',
    });
    const threadId = `thr_bench_relay_${randomBytes(4).toString('hex')}`;
    const sandboxId = await createSandbox(url, key, threadId);
    cleanup = () => deleteSandbox(url, key, sandboxId);
    const direct = async (): Promise<DirectAccess> => {
      const access = await negotiateDirect(url, key, threadId);
      if (access.sandboxId !== sandboxId)
        throw new Error(`the thread route gave sandbox ${access.sandboxId}, not the created ${sandboxId}`);
      return access;
    };
    await direct();
    return { broker, database, key, sandboxId, direct, close };
  } catch (err) {
    await close();
    throw err;
  }
}
