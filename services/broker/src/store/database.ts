// Opens the control-plane database: a Postgres server when a URL is given,
// otherwise embedded Postgres (PGlite) persisted under the broker's data
// directory, so a fresh clone runs with one command. Both get the same migrations.
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@sbx/service-kit';
import type { PGlite } from '@electric-sql/pglite';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import { SbxError } from '@sbx/protocol';
import { PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';
import { applyMigrations, MIGRATIONS_DIR, type EngineLog } from './schema-engine.js';

export type { PrismaClient } from './generated/client.js';

/** The `dataDir` value that keeps the embedded database in memory (tests). */
export const IN_MEMORY = 'memory://';

export interface DatabaseConfig {
  /** `postgres://…`: use that server through @prisma/adapter-pg. */
  readonly databaseUrl?: string | undefined;
  /** Without a URL: PGlite under `<dataDir>/pglite` (default `.data`); `memory://` keeps it in memory. */
  readonly dataDir?: string | undefined;
  /** An embedded database created by the caller, used instead of `dataDir` and closed by close(). */
  readonly pglite?: PGlite | undefined;
  /** Apply pending migrations before returning (default true). */
  readonly migrate?: boolean | undefined;
  readonly migrationsDir?: string | undefined;
  /** Pool size for a Postgres server (pg's default is 10). */
  readonly maxConnections?: number | undefined;
  /** Schema-engine log lines (JSON), e.g. for debug logging. */
  readonly log?: EngineLog | undefined;
}

export interface Database {
  readonly kind: 'postgres' | 'pglite';
  readonly prisma: PrismaClient;
  /** The driver-adapter factory, for the schema engine (migrations, diffs). */
  readonly adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  /** Migrations applied while opening (empty when none were pending or `migrate` was false). */
  readonly appliedMigrations: readonly string[];
  /** One round trip to the database, for health checks; BACKEND_UNAVAILABLE when it fails. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export async function openDatabase(config: DatabaseConfig = {}): Promise<Database> {
  const backend = config.databaseUrl
    ? await openPostgres(config.databaseUrl, config)
    : await openPglite(config);
  const prisma = new PrismaClient({ adapter: backend.adapterFactory });
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    try {
      await prisma.$disconnect();
    } finally {
      await backend.close();
    }
  };
  try {
    const appliedMigrations =
      config.migrate === false
        ? []
        : await applyMigrations(
            backend.adapterFactory,
            config.migrationsDir ?? MIGRATIONS_DIR,
            config.log ? { log: config.log } : {},
          );
    const ping = (): Promise<void> =>
      guard('ping database', async () => void (await prisma.$queryRaw`SELECT 1`));
    return {
      kind: backend.kind,
      prisma,
      adapterFactory: backend.adapterFactory,
      appliedMigrations,
      ping,
      close,
    };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

interface Backend {
  readonly kind: Database['kind'];
  readonly adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  close(): Promise<void>;
}

async function openPostgres(url: string, config: DatabaseConfig): Promise<Backend> {
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new SbxError('BAD_REQUEST', 'databaseUrl must be a postgres:// or postgresql:// URL');
  }
  const { PrismaPg } = await import('@prisma/adapter-pg');
  const adapterFactory = new PrismaPg({
    connectionString: url,
    ...(config.maxConnections === undefined ? {} : { max: config.maxConnections }),
  });
  // Every connect() makes its own pool, which the Prisma client or the schema
  // engine disposes; nothing else is left to close.
  return { kind: 'postgres', adapterFactory, close: async () => {} };
}

async function openPglite(config: DatabaseConfig): Promise<Backend> {
  const [{ PGlite }, { PrismaPGlite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('pglite-prisma-adapter'),
  ]);
  const dataDir = config.dataDir ?? '.data';
  if (config.pglite !== undefined || dataDir.startsWith('memory://')) {
    const pglite = config.pglite ?? (await PGlite.create(dataDir));
    return { kind: 'pglite', adapterFactory: new PrismaPGlite(pglite), close: () => pglite.close() };
  }
  const location = path.resolve(dataDir, 'pglite');
  await mkdir(location, { recursive: true });
  const unlock = await lockDataDir(path.resolve(dataDir));
  let pglite: InstanceType<typeof PGlite>;
  try {
    pglite = await PGlite.create(location);
  } catch (err) {
    await unlock();
    throw new SbxError('BACKEND_UNAVAILABLE', `cannot open the embedded database at ${location}`, {
      cause: err,
    });
  }
  const adapterFactory: SqlMigrationAwareDriverAdapterFactory = new PrismaPGlite(pglite);
  return {
    kind: 'pglite',
    adapterFactory,
    close: async () => {
      try {
        await pglite.close();
      } finally {
        await unlock();
      }
    },
  };
}

/**
 * PGlite has no lock of its own: two processes (say the broker and
 * `pnpm db:migrate`) on one data directory would corrupt it. A lock file
 * holding the owner's pid keeps a second opener out; one left by a dead
 * process is taken over.
 */
async function lockDataDir(dir: string): Promise<() => Promise<void>> {
  const lockPath = path.join(dir, 'pglite.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(lockPath, 'wx');
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      return () => rm(lockPath, { force: true });
    } catch (err) {
      if (!isErrno(err, 'EEXIST')) throw err;
    }
    const holder = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(holder) && holder > 0 && isRunning(holder)) {
      throw new SbxError(
        'BACKEND_UNAVAILABLE',
        `the embedded database in ${dir} is in use by process ${holder} ` +
          `(stop it, or delete ${lockPath} if that process is not a broker)`,
      );
    }
    await rm(lockPath, { force: true });
  }
  throw new SbxError('BACKEND_UNAVAILABLE', `cannot lock the embedded database in ${dir}`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return isErrno(err, 'EPERM');
  }
}
