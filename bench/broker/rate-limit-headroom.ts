/**
 * The broker limits each principal to 600 negotiations and 6000 other session calls a
 * minute (DEFAULT_RATE_LIMITS, not configurable), far below what a throughput benchmark
 * sends. With REDIS_URL the counters live in Redis, where this run can give its principal
 * headroom without touching broker code: the window counter is pre-set to a large negative
 * number with a long expiry. The limiter still runs its Lua INCR on every request (its
 * cost stays in the measurement) but never refuses.
 *
 * The broker's key prefix (`sbx`) and the bootstrap admin principal are the same for every
 * broker, so the run uses a Redis database of its own: the highest-numbered empty one.
 */
import { spawnSync } from 'node:child_process';

const SERVER_URL = (process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379').replace(/\/\d*$/, '');
const KEY_PREFIX = 'sbx';
/** Every bucket the broker counts (rate-limiter.ts `RateLimitBucket`). */
const BUCKETS = ['negotiate', 'session'] as const;
const HEADROOM = -1_000_000_000;
const EXPIRY_MS = 6 * 60 * 60_000;

export interface RedisScratch {
  /** REDIS_URL for the broker: this run's own database. */
  readonly url: string;
  /** Counts of the seeded windows now (they rise by one per limited request). */
  counters(): number[];
  /** Deletes every key the broker wrote there. */
  clear(): void;
}

function redisCli(url: string, args: readonly string[]): string {
  const run = spawnSync('redis-cli', ['-u', url, ...args], { encoding: 'utf8' });
  if (run.error !== undefined) throw run.error;
  if (run.status !== 0 || run.stdout.startsWith('ERR'))
    throw new Error(`redis-cli ${args[0]}: ${run.stdout}${run.stderr}`);
  return run.stdout.trim();
}

function emptyDatabase(): string {
  const count = Number(redisCli(SERVER_URL, ['CONFIG', 'GET', 'databases']).split('\n')[1] ?? 16);
  for (let db = count - 1; db > 0; db--) {
    const url = `${SERVER_URL}/${db}`;
    if (redisCli(url, ['DBSIZE']) === '0') return url;
  }
  throw new Error(`no empty Redis database at ${SERVER_URL} for the run`);
}

/** Rate-limit windows of `principalId` in `tenantId` (key layout of rate-limiter.ts). */
function windowKeys(tenantId: string, principalId: string): string[] {
  return BUCKETS.map((bucket) => `${KEY_PREFIX}:rl:${bucket}:${JSON.stringify([tenantId, principalId])}`);
}

export function prepareRedisScratch(tenantId: string, principalId: string): RedisScratch {
  const url = emptyDatabase();
  const keys = windowKeys(tenantId, principalId);
  for (const key of keys) redisCli(url, ['SET', key, String(HEADROOM), 'PX', String(EXPIRY_MS)]);
  let cleared = false;
  const clear = (): void => {
    if (cleared) return;
    cleared = true;
    process.off('exit', clear);
    const written = redisCli(url, ['--scan', '--pattern', `${KEY_PREFIX}:*`])
      .split('\n')
      .filter(Boolean);
    for (const key of written) redisCli(url, ['DEL', key]);
  };
  process.once('exit', clear);
  return {
    url,
    counters: () => keys.map((key) => Number(redisCli(url, ['GET', key])) - HEADROOM),
    clear,
  };
}
