// Prisma's schema engine compiled to WebAssembly, driven through a driver
// adapter: migrations and schema diffs without Prisma's native binaries (see
// /work/shared/notes/toolchain.md, "Prisma 7 without its native engines").
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as engineModule from '@prisma/schema-engine-wasm/schema_engine_bg';
import { __wbg_set_wasm as setEngineWasm } from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { MigrationList, SchemaEngine, SchemaFilter } from '@prisma/schema-engine-wasm/schema_engine_bg';
import {
  bindMigrationAwareSqlAdapterFactory,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
} from '@prisma/driver-adapter-utils';
import { SbxError } from '@sbx/protocol';
import { REPO_ROOT } from '../repo-root.js';
import { fixExecuteScript } from './adapter-script-fix.js';

/** The repository's `prisma/` directory: schema.prisma and migrations/. */
export const PRISMA_DIR = path.join(REPO_ROOT, 'prisma');
export const SCHEMA_PATH = path.join(PRISMA_DIR, 'schema.prisma');
export const MIGRATIONS_DIR = path.join(PRISMA_DIR, 'migrations');

const LOCKFILE = 'migration_lock.toml';
const MIGRATION_FILE = 'migration.sql';
const NO_FILTERS: SchemaFilter = { externalTables: [], externalEnums: [] };

/** Receives the engine's log lines (JSON strings); the default drops them. */
export type EngineLog = (line: string) => void;

export interface EngineOptions {
  readonly log?: EngineLog;
  /** The datamodel the engine is constructed with; defaults to prisma/schema.prisma. */
  readonly schema?: { readonly path: string; readonly content: string };
}

let loading: Promise<void> | undefined;

/** The WebAssembly global, which the ES2023 + Node typings in use do not declare. */
interface WasmApi {
  instantiate(
    bytes: Uint8Array,
    imports: Record<string, Record<string, unknown>>,
  ): Promise<{ instance: { exports: Record<string, unknown> } }>;
}

function isWasmApi(value: unknown): value is WasmApi {
  return (
    typeof value === 'object' &&
    value !== null &&
    'instantiate' in value &&
    typeof value.instantiate === 'function'
  );
}

/**
 * Instantiates the wasm module once per process. Node cannot `import` a .wasm
 * file, so the bindings module is handed to the instance as its import object,
 * the way a bundler would wire it.
 */
function loadEngineWasm(): Promise<void> {
  loading ??= (async () => {
    const wasm: unknown = Reflect.get(globalThis, 'WebAssembly');
    if (!isWasmApi(wasm)) throw new Error('this runtime has no WebAssembly');
    const require = createRequire(import.meta.url);
    const bindings = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
    const bytes = await readFile(path.join(path.dirname(bindings), 'schema_engine_bg.wasm'));
    const imports: Record<string, unknown> = { ...engineModule };
    // The engine arms 10 s timers (lock and connection timeouts) and never
    // clears them; unref'd, they no longer hold the process open for 10 s after
    // the work is done. Same call as the bindings' own import, plus unref().
    for (const name of Object.keys(imports)) {
      if (name.startsWith('__wbg_setTimeout_')) {
        imports[name] = (callback: () => void, ms: number) => setTimeout(callback, ms >>> 0).unref();
      }
    }
    const { instance } = await wasm.instantiate(bytes, { './schema_engine_bg.js': imports });
    setEngineWasm(instance.exports);
    const start = instance.exports['__wbindgen_start'];
    if (typeof start !== 'function') throw new Error('schema engine wasm has no __wbindgen_start');
    Reflect.apply(start, undefined, []);
  })();
  loading.catch(() => {
    loading = undefined; // let the next call try again
  });
  return loading;
}

/**
 * Runs `fn` with a schema engine connected through `adapterFactory`, then frees
 * the engine and disposes every connection it opened (the engine itself does
 * not, which would leave a pg pool open).
 */
export async function withSchemaEngine<T>(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  fn: (engine: SchemaEngine) => Promise<T>,
  options: EngineOptions = {},
): Promise<T> {
  await loadEngineWasm();
  const schema = options.schema ?? { path: SCHEMA_PATH, content: await readFile(SCHEMA_PATH, 'utf8') };
  const opened: SqlDriverAdapter[] = [];
  const tracking: SqlMigrationAwareDriverAdapterFactory = {
    provider: adapterFactory.provider,
    adapterName: adapterFactory.adapterName,
    connect: async () => track(opened, await adapterFactory.connect()),
    connectToShadowDb: async () => track(opened, await adapterFactory.connectToShadowDb()),
  };
  const log = options.log ?? (() => {});
  let engine: SchemaEngine | undefined;
  try {
    engine = await engineModule.SchemaEngine.new(
      { datamodels: [[schema.path, schema.content]] },
      log,
      bindMigrationAwareSqlAdapterFactory(tracking),
    );
    return await fn(engine);
  } finally {
    engine?.free();
    await Promise.allSettled(opened.map((adapter) => adapter.dispose()));
  }
}

function track(opened: SqlDriverAdapter[], adapter: SqlDriverAdapter): SqlDriverAdapter {
  opened.push(adapter);
  return fixExecuteScript(adapter);
}

/** Reads `<dir>/<name>/migration.sql` for every migration directory, oldest first. */
export async function readMigrations(migrationsDir: string = MIGRATIONS_DIR): Promise<MigrationList> {
  const baseDir = path.resolve(migrationsDir);
  const entries = existsSync(baseDir) ? await readdir(baseDir, { withFileTypes: true }) : [];
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .toSorted();
  const lockfilePath = path.join(baseDir, LOCKFILE);
  return {
    baseDir,
    lockfile: {
      path: LOCKFILE,
      content: existsSync(lockfilePath) ? await readFile(lockfilePath, 'utf8') : null,
    },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(
      names.map(async (name) => {
        const file = path.join(baseDir, name, MIGRATION_FILE);
        const content = existsSync(file)
          ? ({ tag: 'ok', value: await readFile(file, 'utf8') } as const)
          : ({ tag: 'error', value: `${file} does not exist` } as const);
        return { path: name, migrationFile: { path: MIGRATION_FILE, content } };
      }),
    ),
  };
}

/**
 * Applies the migrations not yet recorded in `_prisma_migrations` (the table
 * `prisma migrate deploy` uses, with the same checksums) and returns their names.
 */
export async function applyMigrations(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  migrationsDir: string = MIGRATIONS_DIR,
  options: EngineOptions = {},
): Promise<string[]> {
  const migrationsList = await readMigrations(migrationsDir);
  try {
    return await withSchemaEngine(
      adapterFactory,
      async (engine) =>
        (await engine.applyMigrations({ migrationsList, filters: NO_FILTERS })).appliedMigrationNames,
      options,
    );
  } catch (err) {
    throw engineError('applying migrations', err);
  }
}

/** Where a diff starts: nothing, or the state the migrations directory produces. */
export type DiffSource = 'empty' | { readonly migrationsDir: string };

/**
 * SQL that takes `from` to the datamodel `schemaText`; '' when there is nothing
 * to do. A migrations directory is applied to a throw-away in-memory PGlite and
 * that database is diffed (the engine's own shadow-database path is not
 * available through the wasm build).
 */
export async function diffSql(
  from: DiffSource,
  schemaText: string,
  options: { readonly log?: EngineLog; readonly schemaPath?: string } = {},
): Promise<string> {
  const [{ PGlite }, { PrismaPGlite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('pglite-prisma-adapter'),
  ]);
  const pglite = new PGlite('memory://');
  const schemaPath = options.schemaPath ?? SCHEMA_PATH;
  const schema = { path: schemaPath, content: schemaText };
  const files = [schema];
  try {
    const factory: SqlMigrationAwareDriverAdapterFactory = new PrismaPGlite(pglite);
    if (from !== 'empty') await applyMigrations(factory, from.migrationsDir, { ...options, schema });
    const result = await withSchemaEngine(
      factory,
      (engine) =>
        engine.diff({
          from:
            from === 'empty'
              ? { tag: 'empty' }
              : { tag: 'schemaDatasource', files, configDir: path.dirname(schemaPath) },
          to: { tag: 'schemaDatamodel', files },
          script: true,
          exitCode: true,
          filters: NO_FILTERS,
        }),
      { ...options, schema },
    );
    // exitCode 2 means "the diff is not empty"; 0 comes with an "empty migration" comment.
    return result.exitCode === 2 ? (result.stdout ?? '') : '';
  } catch (err) {
    throw err instanceof SbxError ? err : engineError('diffing the schema', err);
  } finally {
    await pglite.close();
  }
}

function engineError(what: string, err: unknown): SbxError {
  if (err instanceof SbxError) return err;
  const message = typeof err === 'object' && err !== null && 'message' in err ? err.message : err;
  const first = String(message).split('\n')[0] ?? '';
  const unreachable =
    /can't reach database server|ECONNREFUSED|connection (refused|closed|terminated)|timed out/i;
  const code = unreachable.test(first) ? 'BACKEND_UNAVAILABLE' : 'INTERNAL';
  return new SbxError(code, `${what} failed: ${first}`, { cause: err });
}
