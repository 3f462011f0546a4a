import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { openDatabase } from '../../src/store/database.js';
import { PrismaPg } from '@prisma/adapter-pg';
import { applyMigrations, MIGRATIONS_DIR } from '../../src/store/schema-engine.js';
import {
  describeEachBackend,
  OPEN_TIMEOUT_MS,
  openPostgresTestDatabase,
  postgresAvailable,
  useTestDatabase,
} from '../support/test-database.js';

interface MigrationRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  applied_steps_count: number;
}

const migrationNames = (await readdir(MIGRATIONS_DIR, { withFileTypes: true }))
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .toSorted();

describe('the migrations directory', () => {
  it('has an init migration and a postgresql lockfile', async () => {
    expect(migrationNames.length).toBeGreaterThan(0);
    expect(migrationNames[0]).toMatch(/^\d{14}_init$/);
    expect(await readFile(path.join(MIGRATIONS_DIR, 'migration_lock.toml'), 'utf8')).toContain(
      'provider = "postgresql"',
    );
  });
});

describeEachBackend('migrations', (backend) => {
  const db = useTestDatabase(backend, { migrate: false });
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'sbx-migrations-'));
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  const rows = () =>
    db().prisma.$queryRawUnsafe<MigrationRow[]>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at, applied_steps_count FROM _prisma_migrations ORDER BY started_at',
    );

  it(
    'applies every migration and records it in _prisma_migrations as prisma migrate does',
    async () => {
      expect(db().appliedMigrations).toEqual([]);
      expect(await applyMigrations(db().adapterFactory)).toEqual(migrationNames);
      const applied = await rows();
      expect(applied.map((row) => row.migration_name)).toEqual(migrationNames);
      for (const row of applied) {
        const sql = await readFile(path.join(MIGRATIONS_DIR, row.migration_name, 'migration.sql'));
        expect(row.checksum).toBe(createHash('sha256').update(sql).digest('hex'));
        expect(row.finished_at).toBeInstanceOf(Date);
        expect(row.rolled_back_at).toBeNull();
        expect(row.applied_steps_count).toBe(1);
      }
    },
    OPEN_TIMEOUT_MS,
  );

  it('applies nothing the second time', async () => {
    expect(await applyMigrations(db().adapterFactory)).toEqual([]);
    expect((await rows()).length).toBe(migrationNames.length);
  });

  it('runs a failing migration as one transaction: nothing of it stays behind', async () => {
    const dir = path.join(scratch, 'migrations');
    await cp(MIGRATIONS_DIR, dir, { recursive: true });
    await mkdir(path.join(dir, '29990101000000_broken'));
    await writeFile(
      path.join(dir, '29990101000000_broken', 'migration.sql'),
      '-- a comment; with a semicolon\nCREATE TABLE "half_done" ("x" INTEGER);\nSELECT 1 / 0;\n',
    );
    const failure = await applyMigrations(db().adapterFactory, dir).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(SbxError);
    expect((failure as SbxError).code).toBe('INTERNAL');
    expect((failure as SbxError).message).toMatch(/applying migrations failed/);
    const tables = await db().prisma.$queryRawUnsafe<unknown[]>(
      "SELECT 1 FROM information_schema.tables WHERE table_name = 'half_done'",
    );
    expect(tables).toEqual([]);
    const broken = (await rows()).find((row) => row.migration_name === '29990101000000_broken');
    expect(broken?.finished_at).toBeNull();
  });
});

(postgresAvailable ? describe : describe.skip)('migrations on a shared Postgres', () => {
  it(
    'apply once when three brokers start at the same time',
    async () => {
      const db = await openPostgresTestDatabase({ migrate: false });
      try {
        const results = await Promise.all(
          [1, 2, 3].map(() => applyMigrations(new PrismaPg({ connectionString: db.url }))),
        );
        expect(results.flat().toSorted()).toEqual(migrationNames);
        const rows = await db.prisma.$queryRawUnsafe<unknown[]>('SELECT 1 FROM _prisma_migrations');
        expect(rows).toHaveLength(migrationNames.length);
      } finally {
        await db.close();
      }
    },
    OPEN_TIMEOUT_MS,
  );
});

describe('openDatabase', () => {
  it('reports an unreachable Postgres as BACKEND_UNAVAILABLE', async () => {
    const failure = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none' }).catch(
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(SbxError);
    expect((failure as SbxError).code).toBe('BACKEND_UNAVAILABLE');
    expect((failure as SbxError).cause).toBeDefined();
  });

  it('rejects a URL that is not postgres://', async () => {
    await expect(openDatabase({ databaseUrl: 'mysql://localhost/x' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
  });

  it(
    'persists embedded PGlite under <dataDir>/pglite across close and reopen',
    async () => {
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-pglite-'));
      try {
        const first = await openDatabase({ dataDir });
        let second: unknown;
        try {
          expect(first.kind).toBe('pglite');
          expect(first.appliedMigrations).toEqual(migrationNames);
          await first.prisma.tenantPolicy.create({ data: { tenantId: 'persisted', maxSandboxes: 3 } });
          // A second opener (another broker, `pnpm db:migrate`) is kept out while it is open.
          second = await openDatabase({ dataDir }).catch((err: unknown) => err);
        } finally {
          await first.close();
        }
        expect(second).toBeInstanceOf(SbxError);
        expect(second).toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
        expect((second as SbxError).message).toContain(`in use by process ${process.pid}`);
        // A lock left by a process that died is taken over.
        const dead = spawnSync(process.execPath, ['-e', '']).pid;
        await writeFile(path.join(dataDir, 'pglite.lock'), `${dead}\n`);
        expect(await readdir(path.join(dataDir, 'pglite'))).toContain('PG_VERSION');

        const reopened = await openDatabase({ dataDir });
        try {
          expect(reopened.appliedMigrations).toEqual([]);
          const row = await reopened.prisma.tenantPolicy.findUnique({ where: { tenantId: 'persisted' } });
          expect(row?.maxSandboxes).toBe(3);
        } finally {
          await reopened.close();
        }
        expect(await readdir(dataDir)).not.toContain('pglite.lock');
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    OPEN_TIMEOUT_MS,
  );
});
