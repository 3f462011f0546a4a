// Drops what test runs leave in the machine's Postgres and Redis, by the naming
// convention of test-resource-names.mjs:
//  - dropRunResources(run): every database and Redis key of one run (the runner
//    calls it when jest has exited, interrupted or not);
//  - sweepStaleTestResources(): every database and key stamped more than a day ago,
//    and keys of the older `sbxtest-*` prefixes idle for more than a day (an idle
//    time counts from the last access, so such a key is older still). A concurrent
//    run's names are younger than a day and stay.
// Neither throws: an unreachable server is reported in `errors`, and the tests that
// need it skip or fail on their own.
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  isRunId,
  LEGACY_REDIS_PREFIX,
  parseTestResourceName,
  STALE_AFTER_MS,
  TEST_NAME_PREFIX,
} from './test-resource-names.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// pg and ioredis are the broker's dependencies; the workspace root does not list them.
const brokerRequire = createRequire(path.join(root, 'services/broker/package.json'));

export const TEST_DATABASE_ADMIN_URL =
  process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** How long dropRunResources waits for a killed test's CREATE DATABASE to finish. */
const PENDING_CREATE_CEILING_MS = 10_000;

/** Runs fn with a connection to the admin database of the tests' Postgres. */
export async function withPostgres(fn) {
  const { Client } = brokerRequire('pg');
  const client = new Client({
    connectionString: TEST_DATABASE_ADMIN_URL,
    connectionTimeoutMillis: 3000,
    statement_timeout: 30_000,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Runs fn with a client of the tests' Redis. */
export async function withRedis(fn) {
  const { Redis } = brokerRequire('ioredis');
  const redis = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 3000,
    commandTimeout: 10_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
    else redis.disconnect();
  }
}

/** Names of the databases that follow the convention. */
export async function listTestDatabases(client) {
  const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname LIKE 'sbx\\_test\\_%'");
  return rows.map((row) => row.datname).filter((name) => parseTestResourceName(name) !== undefined);
}

async function dropDatabase(client, name) {
  // The name matched the convention: letters, digits and '_' only.
  await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

/** Backends still creating one of run's databases (a test killed mid-CREATE leaves it running). */
async function cancelPendingCreates(client, run) {
  const { rows } = await client.query(
    `SELECT pid, pg_cancel_backend(pid) AS cancelled FROM pg_stat_activity
      WHERE pid <> pg_backend_pid() AND state = 'active' AND query ~* $1`,
    [`^\\s*CREATE DATABASE "?${TEST_NAME_PREFIX}[0-9a-z]+_${run}_`],
  );
  return rows.length;
}

async function dropRunDatabases(run) {
  return withPostgres(async (client) => {
    const dropped = [];
    const deadline = Date.now() + PENDING_CREATE_CEILING_MS;
    for (;;) {
      const pending = await cancelPendingCreates(client, run);
      for (const name of await listTestDatabases(client)) {
        if (parseTestResourceName(name)?.run !== run) continue;
        await dropDatabase(client, name);
        dropped.push(name);
      }
      if (pending === 0 || Date.now() > deadline) return dropped;
      await delay(50);
    }
  });
}

async function dropStaleDatabases(now, maxAgeMs) {
  return withPostgres(async (client) => {
    const dropped = [];
    for (const name of await listTestDatabases(client)) {
      const parsed = parseTestResourceName(name);
      if (parsed === undefined || now - parsed.createdMs <= maxAgeMs) continue;
      await dropDatabase(client, name);
      dropped.push(name);
    }
    return dropped;
  });
}

/** Unlinks the keys matching pattern that select() keeps; returns how many went. */
async function unlinkScanned(redis, pattern, select) {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    const doomed = await select(keys);
    if (doomed.length > 0) deleted += await redis.unlink(...doomed);
    cursor = next;
  } while (cursor !== '0');
  return deleted;
}

async function dropRunKeys(run) {
  return withRedis((redis) =>
    unlinkScanned(redis, `${TEST_NAME_PREFIX}*_${run}_*`, async (keys) =>
      keys.filter((key) => parseTestResourceName(key)?.run === run),
    ),
  );
}

async function dropStaleKeys(now, maxAgeMs) {
  return withRedis(async (redis) => {
    const stamped = await unlinkScanned(redis, `${TEST_NAME_PREFIX}*`, async (keys) =>
      keys.filter((key) => {
        const parsed = parseTestResourceName(key);
        return parsed !== undefined && now - parsed.createdMs > maxAgeMs;
      }),
    );
    const legacy = await unlinkScanned(redis, `${LEGACY_REDIS_PREFIX}*`, async (keys) => {
      if (keys.length === 0) return [];
      const pipeline = redis.pipeline();
      for (const key of keys) pipeline.object('IDLETIME', key);
      const idle = (await pipeline.exec()) ?? [];
      // A key gone meanwhile answers null; an LFU maxmemory-policy answers an error: both stay.
      return keys.filter((_, i) => {
        const [err, seconds] = idle[i] ?? [];
        return !err && typeof seconds === 'number' && seconds * 1000 > maxAgeMs;
      });
    });
    return stamped + legacy;
  });
}

function message(err) {
  return err instanceof Error ? err.message || err.name : String(err);
}

async function settle(what, promise, errors, empty) {
  try {
    return await promise;
  } catch (err) {
    errors.push(`${what}: ${message(err)}`);
    return empty;
  }
}

/** Drops every database and Redis key of `run`. */
export async function dropRunResources(run) {
  if (!isRunId(run)) throw new Error(`invalid test run id ${JSON.stringify(run)}`);
  const errors = [];
  const [databases, redisKeys] = await Promise.all([
    settle('postgres', dropRunDatabases(run), errors, []),
    settle('redis', dropRunKeys(run), errors, 0),
  ]);
  return { databases, redisKeys, errors };
}

/** Drops the databases and Redis keys of every run older than maxAgeMs (a day). */
export async function sweepStaleTestResources({ now = Date.now(), maxAgeMs = STALE_AFTER_MS } = {}) {
  const errors = [];
  const [databases, redisKeys] = await Promise.all([
    settle('postgres', dropStaleDatabases(now, maxAgeMs), errors, []),
    settle('redis', dropStaleKeys(now, maxAgeMs), errors, 0),
  ]);
  return { databases, redisKeys, errors };
}
