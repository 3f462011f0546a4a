/**
 * The subject's side of "create sandbox → run echo": a broker process as operators run it
 * (bench/broker: a throwaway Postgres database, a Redis database of the run's own, the
 * local provider with bubblewrap, the image's node flags), configured for a burst of 100 as
 * an operator would — rate limits raised by environment, the default tenant's
 * `max_sandboxes` raised through the admin API (the default policy allows 10 live
 * sandboxes) and small workspace images (bench-limits.ts) — with `WARM_POOL_SIZE` off or on,
 * and the SDK (`@sbx/client`) as a user's
 * program holds it: one `BrokerClient` with the bootstrap key, default timeouts and retries.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { BrokerClient, BrokerSession } from '@sbx/client';
import { startBenchBroker } from '../broker/bench-limits.js';
import { BOOTSTRAP_PRINCIPAL_ID, BOOTSTRAP_TENANT_ID, type BrokerProcess } from '../broker/broker-process.js';
import { prepareRedisScratch } from '../broker/rate-limit-headroom.js';
import { waitUntilNoneOf } from '../broker/sandbox-processes.js';
import { createScratchDatabase, type ScratchDatabase } from '../broker/scratch-database.js';
import { deleteSandbox } from '../relay/relay-client.js';
import type { Operation } from './patterns.js';

const UNLIMITED = '1000000';
/** Room for a burst of 100 plus a full warm pool refilling behind it. */
const MAX_SANDBOXES = 1000;
/** Releasing ends each agent (SIGTERM, up to 5 s grace); a pool of 100 refills four at a time. */
const SETTLE_TIMEOUT_MS = 180_000;
const RELEASE_CONCURRENCY = 8;
const DELETE_RETRY_MS = 3000;

export interface SdkWorld {
  readonly broker: BrokerProcess;
  readonly database: ScratchDatabase;
  readonly client: BrokerClient;
  readonly poolSize: number;
  /** Sessions opened and not yet released. */
  readonly open: BrokerSession[];
  /** SIGTERM to the broker (its provider stops every agent), drops the database; agents left behind. */
  close(): Promise<number>;
}

const BROKER_ENV = { RATE_LIMIT_NEGOTIATE_PER_MINUTE: UNLIMITED, RATE_LIMIT_SESSION_PER_MINUTE: UNLIMITED };

export async function openSdkWorld(poolSize: number): Promise<SdkWorld> {
  const database = createScratchDatabase();
  const redis = prepareRedisScratch(BOOTSTRAP_TENANT_ID, BOOTSTRAP_PRINCIPAL_ID);
  let broker: BrokerProcess | undefined;
  const open: BrokerSession[] = [];
  const close = async (): Promise<number> => {
    // Sessions a failed pattern left open: their refresh timers would keep this process alive.
    for (const session of open.splice(0)) session.credentials.close();
    try {
      return (await broker?.stop()) ?? 0;
    } finally {
      database.drop();
      redis.clear();
    }
  };
  try {
    broker = await startBenchBroker({
      databaseUrl: database.url,
      redisUrl: redis.url,
      env: BROKER_ENV,
      poolSize,
      maxSandboxes: MAX_SANDBOXES,
    });
    const client = new BrokerClient({ baseUrl: broker.url, apiKey: broker.apiKey });
    return { broker, database, client, poolSize, open, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A thread prefix no other run or pattern shares (the audit is queried by it). */
export const threadPrefix = (label: string): string => `thr_fc_${label}_${randomBytes(3).toString('hex')}_`;

/**
 * Ensure a session on a new thread, then `echo` through the sandbox's own endpoint, its
 * output checked: what a program's first command costs. The session is kept for `settle`.
 */
export function sdkCreateEcho(world: SdkWorld, prefix: string): Operation {
  return async (index) => {
    const session = await BrokerSession.ensure(world.client, { thread_id: `${prefix}${index}` });
    world.open.push(session);
    const marker = `sbx-${index}`;
    const result = await session.sandbox().exec.run({ argv: ['echo', marker] });
    if (result.exit_code !== 0 || result.stdout !== `${marker}\n`)
      throw new Error(
        `echo answered exit ${result.exit_code}: ${JSON.stringify(result.stdout.slice(0, 100))}`,
      );
  };
}

/** Ensures served from the warm pool among the threads of `prefix` (the audit's `sandbox.claimed`). */
export function warmClaims(world: SdkWorld, prefix: string): number {
  return Number(
    world.database.sql(
      `SELECT count(*) FROM audit_events WHERE action = 'sandbox.claimed' AND scope_id LIKE '${prefix}%'`,
    ),
  );
}

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${SETTLE_TIMEOUT_MS} ms`);
    await sleep(100);
  }
}

/** The warm pool is full (now, before a pattern). */
export function poolFull(world: SdkWorld): Promise<void> {
  const warm = (): number => Number(world.database.sql('SELECT count(*) FROM warm_sandboxes'));
  return until(`a full warm pool of ${world.poolSize}`, () => warm() >= world.poolSize);
}

/**
 * Releases every session a pattern opened (the last binding's release ends its sandbox and
 * agent), then waits until no sandbox of a thread is live and their agents are gone, and the
 * warm pool, if any, is full again: the next pattern starts from the same state. A sandbox
 * still live without a session (its ensure failed on the client's side, or is still starting)
 * is deleted, again every few seconds while its lock is busy (409).
 */
export async function settle(world: SdkWorld): Promise<void> {
  const queue = world.open.splice(0);
  const worker = async (): Promise<void> => {
    for (let next = queue.pop(); next !== undefined; next = queue.pop()) await next.release();
  };
  await Promise.all(Array.from({ length: RELEASE_CONCURRENCY }, worker));
  const live = (): string[][] =>
    world.database
      .sql("SELECT id, state FROM sandboxes WHERE live AND scope_id LIKE 'thr_fc_%'")
      .split('\n')
      .filter(Boolean)
      .map((row) => row.split('|'));
  const { url, apiKey } = world.broker;
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (let left = live(); left.length > 0; left = live()) {
    if (Date.now() > deadline) {
      const states = left.map(([, state]) => state).join(', ');
      throw new Error(
        `${left.length} sandboxes of the pattern still live after ${SETTLE_TIMEOUT_MS} ms: ${states}`,
      );
    }
    for (const [id] of left)
      if (id !== undefined) await deleteSandbox(url, apiKey, id).catch(() => undefined);
    await sleep(DELETE_RETRY_MS);
  }
  if (world.poolSize === 0) await waitUntilNoneOf(world.broker.dataDir, SETTLE_TIMEOUT_MS);
  else await poolFull(world);
}
