// `pnpm db:migrate`: applies pending migrations from prisma/migrations to
// DATABASE_URL or, when it is unset, to the embedded PGlite database under
// BROKER_DATA_DIR (default `<repository>/.data/broker`), and prints what it applied. Migrations are
// recorded in `_prisma_migrations`, so `prisma migrate deploy` agrees with it.
import path from 'node:path';
import { loadBrokerConfig } from '../services/broker/src/config.js';
import { openDatabase } from '../services/broker/src/store/database.js';
import { MIGRATIONS_DIR } from '../services/broker/src/store/schema-engine.js';

// The broker's own configuration, so the script and the broker agree on the embedded database's place.
const { databaseUrl, dataDir } = loadBrokerConfig(process.env);
const target = databaseUrl ? redact(databaseUrl) : `embedded PGlite at ${path.resolve(dataDir, 'pglite')}`;

try {
  const db = await openDatabase({ databaseUrl, dataDir, migrate: true, migrationsDir: MIGRATIONS_DIR });
  await db.close();
  if (db.appliedMigrations.length === 0) {
    console.log(`${target}: up to date, no migration applied.`);
  } else {
    console.log(`${target}: applied ${db.appliedMigrations.length} migration(s):`);
    for (const name of db.appliedMigrations) console.log(`  ${name}`);
  }
} catch (err) {
  console.error(`${target}: migration failed:`, err instanceof Error ? err.message : err);
  if (err instanceof Error && err.cause !== undefined) console.error(err.cause);
  process.exitCode = 1;
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'DATABASE_URL';
  }
}
