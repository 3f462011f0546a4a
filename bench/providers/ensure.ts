/**
 * Cold against warm ensures (docs/warm-pools.md) through a broker process as operators run
 * it (Postgres, Redis, the local provider with bubblewrap), `POST /v1/sandbox/sessions
 * {thread_id, mode: 'ensure'}` on a new thread each time:
 * - cold: WARM_POOL_SIZE=0, one at a time: the floor a pool is measured against;
 * - warm: WARM_POOL_SIZE=20, one claim at a time, each once the pool is full again.
 *   Targets p50 ≤ 30 ms, p99 ≤ 100 ms;
 * - burst: WARM_POOL_SIZE=100, once full, 100 concurrent ensures. Target p99 ≤ 700 ms and
 *   no failure (the best public figure for a burst of 100 creates is a p99 of about 740 ms).
 * Each phase has a broker of its own, stopped (every agent with it) before the next.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBenchBroker } from '../broker/bench-limits.js';
import { BOOTSTRAP_PRINCIPAL_ID, BOOTSTRAP_TENANT_ID, type BrokerProcess } from '../broker/broker-process.js';
import { prepareRedisScratch } from '../broker/rate-limit-headroom.js';
import { createScratchDatabase, type ScratchDatabase } from '../broker/scratch-database.js';
import { negotiate } from '../broker/session-client.js';
import { atMost, durationNs, info, percentile, type Verdict } from '../lib/measure.js';

const COLD_ENSURES = 20;
const WARM_POOL = 20;
const BURST = 100;
const FILL_TIMEOUT_MS = 180_000;
const NS_PER_MS = 1e6;
const UNLIMITED = '1000000';
const MAX_SANDBOXES = 1000;

async function withBroker<T>(
  poolSize: number,
  measure: (broker: BrokerProcess, db: ScratchDatabase) => Promise<T>,
): Promise<T> {
  const database = createScratchDatabase();
  const redis = prepareRedisScratch(BOOTSTRAP_TENANT_ID, BOOTSTRAP_PRINCIPAL_ID);
  let broker: BrokerProcess | undefined;
  try {
    // Room for every sandbox of the run (the default tenant policy caps running sandboxes at
    // 10), and workspace images the disk budget admits by the hundred (bench-limits.ts).
    broker = await startBenchBroker({
      databaseUrl: database.url,
      redisUrl: redis.url,
      env: { RATE_LIMIT_NEGOTIATE_PER_MINUTE: UNLIMITED, RATE_LIMIT_SESSION_PER_MINUTE: UNLIMITED },
      poolSize,
      maxSandboxes: MAX_SANDBOXES,
    });
    return await measure(broker, database);
  } finally {
    await broker?.stop();
    database.drop();
    redis.clear();
  }
}

async function poolFull(database: ScratchDatabase, size: number): Promise<void> {
  const deadline = Date.now() + FILL_TIMEOUT_MS;
  while (Number(database.sql('SELECT count(*) FROM warm_sandboxes')) < size) {
    if (Date.now() > deadline)
      throw new Error(`the warm pool did not reach ${size} in ${FILL_TIMEOUT_MS} ms`);
    await sleep(50);
  }
}

const thread = (phase: string, i: number) => `thr_${phase}_${randomBytes(3).toString('hex')}_${i}`;
const ensure = (broker: BrokerProcess, threadId: string) =>
  durationNs(() => negotiate(broker, threadId, 'ensure'));
const ms = (values: readonly number[], p: number) => percentile(values, p) / NS_PER_MS;

async function sequential(
  broker: BrokerProcess,
  phase: string,
  count: number,
  before: () => Promise<void>,
): Promise<number[]> {
  await ensure(broker, thread(`${phase}_warmup`, 0));
  const latencies: number[] = [];
  for (let i = 0; i < count; i += 1) {
    await before();
    latencies.push(await ensure(broker, thread(phase, i)));
  }
  return latencies;
}

/** For investigations: `BENCH_ENSURE_PHASES=burst` runs that phase alone. */
const phases = new Set((process.env['BENCH_ENSURE_PHASES'] ?? 'cold,warm,burst').split(','));

export async function benchEnsure(): Promise<Verdict[]> {
  const skipped = async () => [] as number[];
  const cold = phases.has('cold')
    ? await withBroker(0, (broker) => sequential(broker, 'cold', COLD_ENSURES, async () => {}))
    : await skipped();
  const warm = phases.has('warm')
    ? await withBroker(WARM_POOL, async (broker, db) => {
        await poolFull(db, WARM_POOL);
        return sequential(broker, 'warm', WARM_POOL, () => poolFull(db, WARM_POOL));
      })
    : await skipped();
  const burst = await withBroker(BURST, async (broker, db) => {
    await poolFull(db, BURST);
    const results = await Promise.allSettled(
      Array.from({ length: BURST }, (_, i) => ensure(broker, thread('burst', i))),
    );
    const warmClaims = Number(
      db.sql(
        "SELECT count(*) FROM audit_events WHERE action = 'sandbox.claimed' AND scope_id LIKE 'thr_burst_%'",
      ),
    );
    return { results, warmClaims };
  });
  const burstNs = burst.results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = burst.results.length - burstNs.length;
  return [
    info('cold ensure (pool 0): p50', ms(cold, 50), 'ms'),
    info('cold ensure (pool 0): p99', ms(cold, 99), 'ms'),
    atMost('warm claim (pool 20): p50', ms(warm, 50), 'ms', 30),
    atMost('warm claim (pool 20): p99', ms(warm, 99), 'ms', 100),
    info('warm claim p50 / cold ensure p50', ms(warm, 50) / ms(cold, 50), '×'),
    atMost(
      'burst of 100 ensures (pool 100): p99',
      burstNs.length === 0 ? Infinity : ms(burstNs, 99),
      'ms',
      700,
    ),
    info('burst of 100 ensures (pool 100): p50', burstNs.length === 0 ? Infinity : ms(burstNs, 50), 'ms'),
    info('burst of 100 ensures: served from the pool', burst.warmClaims, ''),
    atMost('burst of 100 ensures: failed', failed, '', 0),
  ];
}
