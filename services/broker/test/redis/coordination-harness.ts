// Runs the coordination contract against both implementations: real Redis
// (time passes for real) and in-process (time moved by an injected clock).
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { createCoordination } from '../../src/adapters/redis/create-coordination.js';
import { testResourceName } from '../../../../scripts/test-resource-names.mjs';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface CoordinationHarness {
  readonly name: 'redis' | 'in-process';
  /** A coordinator under a fresh prefix of this run's; dispose() closes it. */
  open(): Promise<Coordination>;
  /** Another broker instance on the same prefix: a second Redis client, or the same in-process store. */
  openPeer(of: Coordination): Promise<Coordination>;
  /** A separately constructed coordinator on the same prefix (another process's, for in-process). */
  openSeparate(of: Coordination): Promise<Coordination>;
  /** Lets ms pass: the fake clock for in-process, a real wait for Redis. */
  advance(ms: number): Promise<void>;
  /** What the coordinators reported through onError. */
  readonly reported: unknown[];
  /** Closes every coordinator and deletes every key this harness's prefixes created. */
  dispose(): Promise<void>;
}

export interface HarnessFactory {
  readonly name: CoordinationHarness['name'];
  create(): CoordinationHarness;
}

export async function isRedisReachable(url: string = TEST_REDIS_URL): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, connectTimeout: 1000, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch {
    return false;
  } finally {
    await closeClient(probe);
  }
}

/**
 * Both implementations, or in-process only when Redis is down outside CI.
 * With CI=true the Redis run stays in and fails, so CI cannot go green without it.
 */
export async function availableHarnesses(): Promise<HarnessFactory[]> {
  const inProcess: HarnessFactory = { name: 'in-process', create: inProcessHarness };
  const redis: HarnessFactory = { name: 'redis', create: redisHarness };
  if (process.env.CI === 'true' || (await isRedisReachable())) return [inProcess, redis];
  console.warn(
    `\n${'!'.repeat(78)}\n!!! Redis at ${TEST_REDIS_URL} is unreachable: SKIPPING the Redis coordination tests.\n` +
      `!!! Start Redis or set TEST_REDIS_URL; with CI=true this is a failure instead.\n${'!'.repeat(78)}\n`,
  );
  return [inProcess];
}

/** Named like a test database (scripts/test-resource-names.mjs): the test runner drops its keys. */
function uniqueRunPrefix(): string {
  return testResourceName();
}

function inProcessHarness(): CoordinationHarness {
  const run = uniqueRunPrefix();
  const opened: Coordination[] = [];
  const reported: unknown[] = [];
  let clock = Date.now();
  const create = async (keyPrefix: string) => {
    const coordination = await createCoordination({
      keyPrefix,
      now: () => clock,
      onError: (err) => reported.push(err),
    });
    opened.push(coordination);
    return coordination;
  };
  return {
    name: 'in-process',
    reported,
    open: async () => create(`${run}-${opened.length}`),
    openPeer: async (of) => of,
    openSeparate: async (of) => create(of.keyPrefix),
    async advance(ms) {
      clock += ms;
    },
    async dispose() {
      await Promise.all(opened.map((c) => c.close()));
    },
  };
}

function redisHarness(): CoordinationHarness {
  const run = uniqueRunPrefix();
  const opened: Coordination[] = [];
  const reported: unknown[] = [];
  const connect = async (keyPrefix: string) => {
    const coordination = await createCoordination({
      redisUrl: TEST_REDIS_URL,
      keyPrefix,
      onError: (err) => reported.push(err),
    });
    opened.push(coordination);
    return coordination;
  };
  return {
    name: 'redis',
    reported,
    open: async () => connect(`${run}-${opened.length}`),
    openPeer: async (of) => connect(of.keyPrefix),
    openSeparate: async (of) => connect(of.keyPrefix),
    advance: async (ms) => {
      await sleep(ms);
    },
    async dispose() {
      await Promise.all(opened.map((c) => c.close()));
      await deleteKeysMatching(`${run}-*`);
    },
  };
}

/** Leaves Redis as the run found it; returns how many keys it deleted. */
export async function deleteKeysMatching(pattern: string): Promise<number> {
  const admin = new Redis(TEST_REDIS_URL, { lazyConnect: true, retryStrategy: () => null });
  let deleted = 0;
  try {
    await admin.connect();
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      if (keys.length > 0) deleted += await admin.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await closeClient(admin);
  }
  return deleted;
}

// disconnect() on an ioredis client whose socket already closed arms a 2 s
// timer that keeps jest from exiting.
async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'ready') await client.quit();
  else if (client.status !== 'end') client.disconnect();
}

/** Collects messages and waits for them without fixed sleeps. */
export function messageCollector(): {
  messages: string[];
  handler: (m: string) => void;
  waitFor: (n: number) => Promise<void>;
} {
  const messages: string[] = [];
  return {
    messages,
    handler: (message) => messages.push(message),
    async waitFor(n) {
      const deadline = Date.now() + 3000;
      while (messages.length < n) {
        if (Date.now() > deadline) throw new Error(`got ${messages.length} of ${n} messages within 3 s`);
        await sleep(5);
      }
    },
  };
}
