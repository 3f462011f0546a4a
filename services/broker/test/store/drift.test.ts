// schema.prisma and prisma/migrations must describe the same database: the
// migrations, applied to a fresh embedded Postgres, diffed against the
// datamodel, must leave nothing to do. Edit schema.prisma without adding a
// migration (`pnpm db:diff --create <name>`) and this fails, printing the SQL.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from '@jest/globals';
import { diffSql, MIGRATIONS_DIR, SCHEMA_PATH } from '../../src/store/schema-engine.js';
import { OPEN_TIMEOUT_MS } from '../support/test-database.js';

const schema = await readFile(SCHEMA_PATH, 'utf8');

describe('schema drift', () => {
  it(
    'prisma/migrations produce exactly prisma/schema.prisma',
    async () => {
      const sql = await diffSql({ migrationsDir: MIGRATIONS_DIR }, schema);
      if (sql !== '') {
        console.error(
          `schema.prisma has changes no migration carries; run \`pnpm db:diff --create <name>\`:\n${sql}`,
        );
      }
      expect(sql).toBe('');
    },
    OPEN_TIMEOUT_MS,
  );

  it(
    'notices a model that has no migration (the check above has teeth)',
    async () => {
      const edited = `${schema}\nmodel DriftProbe {\n  id String @id\n  @@map("drift_probe")\n}\n`;
      const sql = await diffSql({ migrationsDir: MIGRATIONS_DIR }, edited);
      expect(sql).toContain('CREATE TABLE "drift_probe"');
    },
    OPEN_TIMEOUT_MS,
  );
});
