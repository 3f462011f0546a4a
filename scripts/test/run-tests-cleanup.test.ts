// scripts/run-tests.mjs and scripts/test-cleanup.mjs against the machine's real Postgres
// and Redis: an interrupted run drops its own databases and keys (and no other run's),
// and the start-up sweep drops what is stamped more than a day ago and keeps the rest.
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  dropRunResources,
  listTestDatabases,
  sweepStaleTestResources,
  withPostgres,
  withRedis,
} from '../test-cleanup.mjs';
import {
  newRunId,
  parseTestResourceName,
  STALE_AFTER_MS,
  testResourceName,
} from '../test-resource-names.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixtureConfig = path.join(root, 'scripts/test/fixtures/run-tests-interrupt/jest.config.mjs');

async function reachable(): Promise<boolean> {
  try {
    await withPostgres((client) => client.query('SELECT 1'));
    await withRedis((redis) => redis.call('PING'));
    return true;
  } catch {
    return false;
  }
}

const servers = process.env.CI === 'true' || (await reachable());
if (!servers)
  console.warn('!! run-tests cleanup tests SKIPPED: Postgres or Redis unreachable (CI=true fails instead)');

const databases = () => withPostgres(listTestDatabases);
const keyExists = (key: string) => withRedis(async (redis) => (await redis.call('EXISTS', key)) === 1);
/** Keys of a run's Redis prefixes (stamped names of that run). */
const runKeys = (run: string) =>
  withRedis(async (redis) => {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = (await redis.call('SCAN', cursor, 'MATCH', `sbx_test_*_${run}_*`)) as [
        string,
        string[],
      ];
      found.push(...keys.filter((key) => parseTestResourceName(key)?.run === run));
      cursor = next;
    } while (cursor !== '0');
    return found;
  });

/** Another run's database and key, which must outlive this run's cleanup. */
async function createResourcesOf(run: string, now = Date.now()): Promise<{ database: string; key: string }> {
  const database = testResourceName(run, now);
  const key = `${testResourceName(run, now)}:probe`;
  await withPostgres((client) => client.query(`CREATE DATABASE "${database}"`));
  await withRedis((redis) => redis.call('SET', key, 'x'));
  return { database, key };
}

describe('test names', () => {
  it('carry their creation time and run, with or without a key after the prefix', () => {
    const name = testResourceName('ab12', Date.UTC(2030, 0, 2, 3, 4, 5));
    expect(name).toMatch(/^sbx_test_[0-9a-z]+_ab12_[0-9a-f]{8}$/);
    expect(parseTestResourceName(name)).toEqual({ createdMs: Date.UTC(2030, 0, 2, 3, 4, 5), run: 'ab12' });
    expect(parseTestResourceName(`${name}-0:lock:x`)?.run).toBe('ab12');
    for (const other of ['sbxtest-reaper-0a1b2c3d:x', 'sbx_bench_0a1b2c', 'sbx_test_x', 'postgres']) {
      expect(parseTestResourceName(other)).toBeUndefined();
    }
  });
});

(servers ? describe : describe.skip)(
  'cleanup of test databases and Redis keys [real Postgres and Redis]',
  () => {
    const otherRun = newRunId();
    afterAll(async () => {
      await dropRunResources(otherRun);
    });

    it('on SIGINT the runner stops jest, drops the run’s database and keys, keeps other runs’, exits 130', async () => {
      const other = await createResourcesOf(otherRun);
      const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
      delete env.JEST_WORKER_ID;
      const runner = spawn(process.execPath, ['scripts/run-tests.mjs', `--config=${fixtureConfig}`], {
        cwd: root,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = once(runner, 'exit');
      const stdout: string[] = [];
      createInterface({ input: runner.stdout }).on('line', (line) => stdout.push(line));
      // The fixture says when it holds its database and key; the runner must not exit before.
      const { database, key } = await new Promise<{ database: string; key: string }>((resolve, reject) => {
        const lines: string[] = [];
        createInterface({ input: runner.stderr }).on('line', (line) => {
          lines.push(line);
          const match = /^HOLDING database=(\S+) key=(\S+)$/.exec(line);
          if (match) resolve({ database: match[1]!, key: match[2]! });
        });
        void exited.then(() =>
          reject(new Error(`the runner exited first:\n${[...stdout, ...lines].join('\n')}`)),
        );
      });
      const run = /^run-tests: run ([0-9a-f]+):/.exec(stdout[0] ?? '')?.[1];
      expect(run).toBeDefined();
      expect(parseTestResourceName(database)?.run).toBe(run);
      expect(parseTestResourceName(key)?.run).toBe(run);
      expect(await databases()).toContain(database);
      expect(await keyExists(key)).toBe(true);

      runner.kill('SIGINT');
      const [code] = await exited;

      expect(code).toBe(130);
      expect(stdout.at(-1)).toMatch(/^tests: \d+ passed, [1-9]\d* failed$/);
      const left = await databases();
      expect(left.filter((name) => parseTestResourceName(name)?.run === run)).toEqual([]);
      expect(await runKeys(run!)).toEqual([]);
      expect(left).toContain(other.database);
      expect(await keyExists(other.key)).toBe(true);
    }, 120_000);

    it('the start-up sweep drops what is stamped more than a day ago and keeps a fresh one', async () => {
      const old = await createResourcesOf(otherRun, Date.now() - STALE_AFTER_MS - 3_600_000);
      const fresh = await createResourcesOf(otherRun, Date.now() - STALE_AFTER_MS + 3_600_000);
      // A key of the older `sbxtest-` prefixes carries no stamp: its idle time decides.
      const legacyIdle = `sbxtest-${randomBytes(4).toString('hex')}:idle`;
      const legacyFresh = `sbxtest-${randomBytes(4).toString('hex')}:fresh`;
      await withRedis(async (redis) => {
        await redis.call('SET', legacyFresh, 'x');
        const dump = await redis.callBuffer('DUMP', legacyFresh);
        const idleSeconds = (STALE_AFTER_MS + 3_600_000) / 1000;
        await redis.call('RESTORE', legacyIdle, 0, dump as Uint8Array, 'IDLETIME', idleSeconds);
      });

      try {
        const report = await sweepStaleTestResources();

        expect(report.errors).toEqual([]);
        const left = await databases();
        expect(left).not.toContain(old.database);
        expect(left).toContain(fresh.database);
        expect(await keyExists(old.key)).toBe(false);
        expect(await keyExists(fresh.key)).toBe(true);
        expect(await keyExists(legacyIdle)).toBe(false);
        expect(await keyExists(legacyFresh)).toBe(true);
      } finally {
        await withRedis((redis) => redis.call('DEL', legacyIdle, legacyFresh));
      }
    }, 60_000);
  },
);
