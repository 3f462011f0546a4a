// "Migrations applied", for /readyz: every migration directory the broker ships
// is recorded as finished (and not rolled back) in `_prisma_migrations`, the
// table `prisma migrate deploy` and applyMigrations write.
import { readdir } from 'node:fs/promises';
import { SbxError } from '@sbx/protocol';
import type { PrismaClient } from './generated/client.js';
import { MIGRATIONS_DIR } from './schema-engine.js';

/** Names of the migration directories (read once: they do not change while the broker runs). */
async function shippedMigrations(migrationsDir: string): Promise<readonly string[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
}

/** A probe that fails (BACKEND_UNAVAILABLE, naming them) while shipped migrations are not applied. */
export function migrationsAppliedProbe(
  prisma: PrismaClient,
  migrationsDir: string = MIGRATIONS_DIR,
): () => Promise<void> {
  let shipped: Promise<readonly string[]> | undefined;
  return async () => {
    shipped ??= shippedMigrations(migrationsDir);
    const expected = await shipped;
    const rows = await prisma.$queryRaw<{ migration_name: string }[]>`
      SELECT migration_name FROM _prisma_migrations
      WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
    const applied = new Set(rows.map((row) => row.migration_name));
    const pending = expected.filter((name) => !applied.has(name));
    if (pending.length > 0)
      throw new SbxError('BACKEND_UNAVAILABLE', `migrations not applied: ${pending.join(', ')}`);
  };
}
