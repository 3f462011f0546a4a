// Databases for store tests, on both backends the broker supports:
//  - postgres: a uniquely named database on 127.0.0.1:5432 (user postgres, trust),
//    or on the server of TEST_DATABASE_URL (an admin URL) when set, created per
//    open() and dropped (connections forced out) on close(). Its name carries its
//    creation time and run (scripts/test-resource-names.mjs), by which the test
//    runner drops what an interrupted or crashed run left behind. When the server
//    cannot be reached, its tests are skipped with a loud warning, except under
//    CI=true, where importing this module fails instead.
//  - pglite: embedded Postgres in memory.
// Both are opened through openDatabase() with migrations applied, like the broker.
// In a test file: describeEachBackend(title, (backend) => { const db =
// useTestDatabase(backend) … }) runs the block once per backend, sharing one
// database per block, and reports an unreachable backend's block as skipped.
import { Blob } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe } from '@jest/globals';
import { Client } from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { testResourceName } from '../../../../scripts/test-resource-names.mjs';
import { IN_MEMORY, openDatabase, type Database } from '../../src/store/database.js';
import { applyMigrations, readMigrations } from '../../src/store/schema-engine.js';

export const ADMIN_URL = process.env['TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';
/** PGlite takes seconds to initialise on a small machine, more when jest runs files in parallel. */
export const OPEN_TIMEOUT_MS = 120_000;

export type BackendName = 'postgres' | 'pglite';

export interface TestDatabase extends Database {
  /** The database's URL (postgres) or `memory://` (pglite). */
  readonly url: string;
}

export interface OpenOptions {
  /** Apply migrations on open (default true). */
  readonly migrate?: boolean;
}

export interface TestBackend {
  readonly name: BackendName;
  /** False when the backend cannot be reached here; its tests are then skipped. */
  readonly available: boolean;
  open(options?: OpenOptions): Promise<TestDatabase>;
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

async function withAdmin<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {}); // a dropped admin connection must not crash the test process
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

async function probePostgres(): Promise<string | undefined> {
  try {
    await withAdmin((client) => client.query('SELECT 1'));
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message || err.name : String(err);
  }
}

async function dropDatabase(client: Client, name: string): Promise<void> {
  await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

const unreachable = await probePostgres();
if (unreachable !== undefined) {
  const where = redact(ADMIN_URL);
  if (process.env['CI'] === 'true') {
    throw new Error(`Postgres for tests is unreachable at ${where} (${unreachable}); CI=true requires it.`);
  }
  const bar = '!'.repeat(78);
  console.warn(
    `\n${bar}\n!! POSTGRES TESTS SKIPPED: cannot reach ${where}\n!! (${unreachable})\n` +
      `!! Start Postgres on 127.0.0.1:5432 (user postgres, trust) or set TEST_DATABASE_URL.\n` +
      `!! Under CI=true this is a failure, not a skip.\n${bar}\n`,
  );
}

/** Creates a uniquely named database, opens it, and drops it again on close(). */
export async function openPostgresTestDatabase(options: OpenOptions = {}): Promise<TestDatabase> {
  const name = testResourceName();
  await withAdmin((client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const drop = () => withAdmin((client) => dropDatabase(client, name));
  let db: Database;
  try {
    db = await openDatabase({ databaseUrl: url.toString(), migrate: options.migrate ?? true });
  } catch (err) {
    await drop();
    throw err;
  }
  return {
    ...db,
    url: url.toString(),
    close: async () => {
      try {
        await db.close();
      } finally {
        await drop();
      }
    },
  };
}

/**
 * An in-memory PGlite. With migrations (the default) it starts from a migrated
 * template cached in the OS temp directory, keyed by the migrations and the
 * PGlite build: initdb costs seconds per instance, loading a template under one.
 * Without migrations it is a fresh, empty instance.
 */
export async function openPgliteTestDatabase(options: OpenOptions = {}): Promise<TestDatabase> {
  const migrate = options.migrate ?? true;
  const pglite = migrate ? await PGlite.create({ loadDataDir: await migratedTemplate() }) : undefined;
  const db = await openDatabase({ dataDir: IN_MEMORY, pglite, migrate });
  return { ...db, url: IN_MEMORY };
}

export async function migratedTemplate(): Promise<Blob> {
  const migrations = await readMigrations();
  const key = createHash('sha256')
    .update(createRequire(import.meta.url).resolve('@electric-sql/pglite')) // the pnpm path carries the version
    .update(JSON.stringify(migrations.migrationDirectories))
    .digest('hex')
    .slice(0, 16);
  const file = path.join(os.tmpdir(), `sbx-pglite-template-${key}.tar`);
  try {
    return new Blob([await readFile(file)]);
  } catch {
    // not built yet
  }
  const pglite = await PGlite.create(IN_MEMORY);
  try {
    await applyMigrations(new PrismaPGlite(pglite));
    const dump = await pglite.dumpDataDir('none');
    const bytes = Buffer.from(await dump.arrayBuffer());
    const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await writeFile(partial, bytes);
    await rename(partial, file).catch(() => rm(partial, { force: true })); // parallel workers: any copy will do
    return new Blob([bytes]);
  } finally {
    await pglite.close();
  }
}

export const postgresAvailable = unreachable === undefined;

export const backends: readonly TestBackend[] = [
  { name: 'postgres', available: postgresAvailable, open: openPostgresTestDatabase },
  { name: 'pglite', available: true, open: openPgliteTestDatabase },
];

/** `describe` per backend; an unavailable backend's block is reported as skipped. */
export function describeEachBackend(title: string, fn: (backend: TestBackend) => void): void {
  for (const backend of backends) {
    (backend.available ? describe : describe.skip)(`${title} [${backend.name}]`, () => fn(backend));
  }
}

/**
 * Opens one database for the enclosing describe block (beforeAll) and closes it
 * afterwards (afterAll); returns its accessor.
 */
export function useTestDatabase(backend: TestBackend, options: OpenOptions = {}): () => TestDatabase {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await backend.open(options);
  }, OPEN_TIMEOUT_MS);
  afterAll(async () => {
    await db?.close();
  }, OPEN_TIMEOUT_MS);
  return () => {
    if (db === undefined) throw new Error(`the ${backend.name} test database is not open`);
    return db;
  };
}
