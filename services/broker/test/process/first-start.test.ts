// A new user's first `pnpm start` when something is in the way (issue 27, item 1): a port
// already taken is answered in one line before the migrations, and the admin key of a data
// directory's first start is never lost to a start that failed: the next start prints one.
// Real broker processes on embedded defaults (PGlite), no warm pool.
import { closeSync, existsSync, openSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { checkPortFree, ListenError } from '../../src/listen-port.js';
import { newDataDirOutsideTmp, removeDataDir } from '../providers/local-provider-kit.js';
import { runBrokerToExit, startBrokerProcess, type BrokerProcess } from './broker-process.js';

const SLOW = 240_000;
const KEY_LINE = /admin API key \(shown once, store it now\): (sbk_\S+)\n/;
const MIGRATED = /"msg":"applied migrations"/;

const held: Server[] = [];
const brokers: BrokerProcess[] = [];
const dataDirs: string[] = [];
afterEach(async () => {
  await Promise.all(brokers.splice(0).map((broker) => broker.kill('SIGTERM')));
  await Promise.all(held.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  for (const dir of dataDirs.splice(0)) removeDataDir(dir);
}, SLOW);

/** A port another server listens on, as a second program on the user's machine would. */
async function holdPort(): Promise<number> {
  const server = createServer();
  held.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening on TCP');
  return address.port;
}

/** A data directory path nothing has made yet. */
function unmadeDataDir(): string {
  const parent = newDataDirOutsideTmp();
  dataDirs.push(parent);
  return path.join(parent, 'broker');
}

/** A start on `dataDir` that prints an admin key, and the key. */
async function startWithKey(dataDir: string): Promise<{ broker: BrokerProcess; key: string }> {
  const broker = await startBrokerProcess({ BROKER_DATA_DIR: dataDir });
  brokers.push(broker);
  await broker.waitFor(KEY_LINE);
  return { broker, key: KEY_LINE.exec(broker.output())?.[1] ?? '' };
}

interface KeyView {
  readonly name: string | null;
  readonly revoked_at: string | null;
}

async function apiKeys(broker: BrokerProcess, key: string): Promise<{ status: number; items: KeyView[] }> {
  const res = await fetch(`${broker.url}/admin/api-keys?include_revoked=true`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const body = (await res.json()) as { items?: KeyView[] };
  return { status: res.status, items: body.items ?? [] };
}

describe('the first start of the broker, when something is in the way', () => {
  it(
    'answers a taken port in one line before migrating; the next start prints a key that works',
    async () => {
      const port = await holdPort();
      const dataDir = unmadeDataDir();
      const refused = await runBrokerToExit({ BROKER_DATA_DIR: dataDir, PORT: String(port) });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `port ${port} on 127.0.0.1 is in use: set PORT=<another port> (PORT=0 picks a free one), or stop what holds it\n`,
      );
      // Checked before anything was made: no migration ran, no data directory, no key.
      expect(refused.stdout).not.toMatch(MIGRATED);
      expect(refused.stdout).not.toMatch(/admin API key/);
      expect(existsSync(dataDir)).toBe(false);

      const { broker, key } = await startWithKey(dataDir);
      // The same data directory's start does migrate, and says so: the line above was absent for a reason.
      expect(broker.output()).toMatch(MIGRATED);
      expect(broker.output()).not.toMatch(/warm pool:/);
      const listed = await apiKeys(broker, key);
      expect(listed.status).toBe(200);
      expect(listed.items.filter((item) => item.name === 'generated admin')).toHaveLength(1);
    },
    SLOW,
  );

  it(
    'withdraws the admin key it made but could not print; the next start prints one that works',
    async () => {
      const dataDir = unmadeDataDir();
      // Standard output on a full disk: the banner, the key's only way out, cannot be written.
      const full = openSync('/dev/full', 'w');
      const failed = await runBrokerToExit(
        { BROKER_DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
        { stdout: full },
      ).finally(() => closeSync(full));
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/^could not print the banner \(ENOSPC[^\n]*\): no admin key was kept\n$/);

      const { broker, key } = await startWithKey(dataDir);
      const listed = await apiKeys(broker, key);
      expect(listed.status).toBe(200);
      const generated = listed.items.filter((item) => item.name === 'generated admin');
      // The failed start's key, revoked, and this start's.
      expect(generated).toHaveLength(2);
      expect(generated.filter((item) => item.revoked_at === null)).toHaveLength(1);
    },
    SLOW,
  );
});

describe('checkPortFree', () => {
  it('refuses a taken port with the one-line message, and lets a free one go again', async () => {
    const port = await holdPort();
    await expect(checkPortFree('127.0.0.1', port)).rejects.toThrow(ListenError);
    await expect(checkPortFree('127.0.0.1', port)).rejects.toThrow(`port ${port} on 127.0.0.1 is in use`);

    await new Promise((resolve) => held.pop()?.close(resolve));
    await checkPortFree('127.0.0.1', port);
    // Released: the broker's own listen, after the migrations, can take it.
    const again = createServer();
    held.push(again);
    await new Promise<void>((resolve) => again.listen(port, '127.0.0.1', resolve));
  });

  it('has nothing to check on port 0 (the system picks a free port)', async () => {
    await expect(checkPortFree('127.0.0.1', 0)).resolves.toBeUndefined();
  });
});
