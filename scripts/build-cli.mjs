// `node scripts/build-cli.mjs [--checkout]`: the `sbx` CLI as one esbuild bundle of
// packages/cli/src/main.ts with everything it imports, the workspace packages (@sbx/*,
// TypeScript sources) and the third-party ones (zod, ws, the MCP SDK) alike, so it needs no
// node_modules at run time (docs/packages.md, "The CLI bundle"). Code splitting puts each
// command (src/command-table.ts loads them with dynamic imports) in a chunk of its own:
// `<out>/bin.js` (with a `#!/usr/bin/env node` line) and `<out>/chunks/*.js`.
//
// - no flag (the package's `prepack`): empties packages/cli/dist and builds the tarball's bin
//   there.
// - `--checkout`: what packages/cli/bin/sbx.mjs runs in this repository, built into
//   packages/cli/node_modules/.cache/sbx-cli with a stamp of the files it was built from
//   (esbuild's metafile), so the bin rebuilds it when one of them changed.
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ajvOnFirstUse,
  sideEffectFreePackages,
  USAGE_FILE,
  usageApart,
  wsOnFirstUse,
  zodEnglishOnly,
} from './cli-bundle-plugins.mjs';
import { ESM_REQUIRE_BANNER, loadEsbuild, REPO_ROOT } from './esbuild-kit.mjs';
import { thirdPartyNotices } from './third-party-notices.mjs';

const CLI_DIR = path.join(REPO_ROOT, 'packages', 'cli');
const MAIN = path.join(CLI_DIR, 'src', 'main.ts');
export const PACK_DIR = path.join(CLI_DIR, 'dist');
export const CHECKOUT_DIR = path.join(CLI_DIR, 'node_modules', '.cache', 'sbx-cli');
export const STAMP_FILE = 'stamp.json';
export const NOTICES_FILE = 'THIRD-PARTY-NOTICES.txt';

/** ws's optional native helpers: ws runs without them (it requires them in a try). */
const EXTERNAL_MODULES = ['bufferutil', 'utf-8-validate'];

/**
 * Besides the bundle's inputs, what decides its content: this recipe, the TypeScript
 * settings esbuild reads, and the installed dependencies (pnpm rewrites `.modules.yaml` on
 * every install; the bundle's files under node_modules are not stamped one by one).
 */
const RECIPE_FILES = [
  'scripts/build-cli.mjs',
  'scripts/cli-bundle-plugins.mjs',
  'scripts/third-party-notices.mjs',
  'scripts/esbuild-kit.mjs',
  'tsconfig.json',
  'tsconfig.base.json',
  'node_modules/.modules.yaml',
];

/**
 * A chunk a rebuild superseded is removed once it is this old: an `sbx` started just before
 * the rebuild may still be loading it (an `sbx` loads every chunk it needs when it starts).
 */
const OLD_CHUNK_MS = 60 * 60 * 1000;

const COMMON = {
  absWorkingDir: REPO_ROOT,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Less to read and parse at every start; the CLI prints one-line errors, never stacks.
  minify: true,
  metafile: true,
  write: false,
  logLevel: 'error',
};

/**
 * Builds in memory: the split bundle (`bin.js`, `chunks/`) and the usage text on its own
 * (`usage.js`, see usageApart). Returns the output files and the files they were built from.
 */
async function bundle(outDir) {
  const esbuild = loadEsbuild();
  const [split, usage] = await Promise.all([
    esbuild.build({
      ...COMMON,
      entryPoints: { bin: MAIN },
      outdir: outDir,
      chunkNames: 'chunks/[name]-[hash]',
      splitting: true,
      banner: { js: ESM_REQUIRE_BANNER },
      external: EXTERNAL_MODULES.flatMap((name) => [name, `${name}/*`]),
      plugins: [
        usageApart(MAIN),
        sideEffectFreePackages(),
        zodEnglishOnly(),
        wsOnFirstUse(),
        ajvOnFirstUse(),
      ],
    }),
    esbuild.build({
      ...COMMON,
      entryPoints: [path.join(CLI_DIR, 'src', 'commands', 'help.ts')],
      outfile: path.join(outDir, USAGE_FILE),
      plugins: [sideEffectFreePackages()],
    }),
  ]);
  return {
    outputFiles: [...split.outputFiles, ...usage.outputFiles],
    inputs: [...Object.keys(split.metafile.inputs), ...Object.keys(usage.metafile.inputs)],
  };
}

/** Temp file + rename: an `sbx` starting meanwhile reads the old file or the new one, never half of one. */
function writeAtomically(file, contents, mode = 0o644) {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temp, contents, { mode });
  chmodSync(temp, mode);
  renameSync(temp, file);
}

/** Writes the chunks first and `bin.js` last, so a new `bin.js` never names a chunk not yet there. */
function writeOutputs(outDir, outputFiles) {
  const entry = path.join(outDir, 'bin.js');
  const ordered = [...outputFiles].sort((a, b) => Number(a.path === entry) - Number(b.path === entry));
  for (const file of ordered) {
    if (file.path === entry) writeAtomically(entry, `#!/usr/bin/env node\n${file.text}`, 0o755);
    else writeAtomically(file.path, file.contents);
  }
}

const fingerprintOf = (file) => {
  const entry = statSync(path.join(REPO_ROOT, file), { throwIfNoEntry: false });
  return entry === undefined ? 'missing' : `${entry.size}:${entry.mtimeMs}`;
};

/** What packages/cli/bin/sbx.mjs compares: the bundle's own inputs outside node_modules, and the recipe. */
function stampOf(bundleInputs) {
  const inputs = [...new Set(bundleInputs)].filter((file) => !file.split('/').includes('node_modules'));
  const packages = new Set(inputs.map((file) => /^packages\/[^/]+\//.exec(file)?.[0]).filter(Boolean));
  const files = [...inputs, ...[...packages].map((dir) => `${dir}package.json`), ...RECIPE_FILES];
  return { inputs: Object.fromEntries(files.map((file) => [file, fingerprintOf(file)])) };
}

function pruneOldChunks(outDir, outputFiles) {
  const current = new Set(outputFiles.map((file) => file.path));
  const chunks = path.join(outDir, 'chunks');
  for (const name of readdirSync(chunks)) {
    const file = path.join(chunks, name);
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!current.has(file) && stat !== undefined && Date.now() - stat.mtimeMs > OLD_CHUNK_MS) {
      rmSync(file, { force: true });
    }
  }
}

/**
 * The tarball's bundle: `dist/` emptied, then built (run by @sbx/cli's `prepack`), with the
 * licenses of the bundled packages beside it.
 */
export async function buildPackedCli(outDir = PACK_DIR) {
  rmSync(outDir, { recursive: true, force: true });
  const result = await bundle(outDir);
  writeOutputs(outDir, result.outputFiles);
  writeAtomically(path.join(outDir, NOTICES_FILE), thirdPartyNotices(result.inputs));
  return outDir;
}

/**
 * The checkout's bundle, stamped. Concurrent `sbx` processes may each find it stale and build
 * it: every file is replaced atomically and the stamp is written last, so they only repeat work.
 */
export async function buildCheckoutCli(outDir = CHECKOUT_DIR) {
  const result = await bundle(outDir);
  writeOutputs(outDir, result.outputFiles);
  writeAtomically(path.join(outDir, STAMP_FILE), JSON.stringify(stampOf(result.inputs)));
  pruneOldChunks(outDir, result.outputFiles);
  return outDir;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const checkout = process.argv.includes('--checkout');
  try {
    const out = checkout ? await buildCheckoutCli() : await buildPackedCli();
    process.stderr.write(`sbx bundle written to ${path.relative(process.cwd(), out) || '.'}\n`);
  } catch (err) {
    process.stderr.write(`build-cli: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
