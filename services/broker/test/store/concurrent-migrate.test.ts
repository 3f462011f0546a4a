// A first rollout starts broker replicas together on an empty Postgres: each migrates
// at start. Prisma's schema engine holds a Postgres advisory lock while it applies
// migrations, so one replica applies every migration and the others wait, then find
// nothing left: all of them start. This guards that property of the engine we embed.
import { readdir } from 'node:fs/promises';
import { afterAll, describe, expect, it } from '@jest/globals';
import { openDatabase, type Database } from '../../src/store/database.js';
import { MIGRATIONS_DIR } from '../../src/store/schema-engine.js';
import { backends, OPEN_TIMEOUT_MS, type TestDatabase } from '../support/test-database.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;

(postgres.available ? describe : describe.skip)('brokers migrating one empty database at once', () => {
  let empty: TestDatabase | undefined;
  const opened: Database[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((db) => db.close()));
    await empty?.close();
  });

  it(
    'all start; every migration is applied exactly once',
    async () => {
      empty = await postgres.open({ migrate: false });
      const replicas = await Promise.all(
        Array.from({ length: 3 }, () => openDatabase({ databaseUrl: empty!.url, migrate: true })),
      );
      opened.push(...replicas);
      const names = (await readdir(MIGRATIONS_DIR, { withFileTypes: true }))
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name)
        .toSorted();
      expect(replicas.flatMap((db) => db.appliedMigrations).toSorted()).toEqual(names);
      const rows = await replicas[0]!.prisma.$queryRawUnsafe<{ migration_name: string }[]>(
        'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
      );
      expect(rows.map((row) => row.migration_name).toSorted()).toEqual(names);
    },
    OPEN_TIMEOUT_MS,
  );
});
