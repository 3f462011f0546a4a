import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { REPO_ROOT } from '../repo-root.js';
import { BUNDLE_TRIMS, bundleTrims } from './agent-bundle-trims.js';
import type { AgentCommand } from './agent-process.js';
import { providerUnavailable } from './provider.js';

/**
 * Runs the agent of this repository as one pre-built file. `tsx services/agent/src/main.ts`
 * spends seconds compiling TypeScript on every start; a bundle run by plain node starts
 * in a fraction of that, which the cold-`ensure` target needs. The bundle is rebuilt
 * only when a file it was built from changed (esbuild's metafile lists them all).
 */

const AGENT_DIR = path.join(REPO_ROOT, 'services', 'agent');
const AGENT_ENTRY = path.join(AGENT_DIR, 'src', 'main.ts');

/** Native or optional modules: loaded at run time from the agent's own node_modules. */
const EXTERNAL_MODULES = ['node-pty', 'bufferutil', 'utf-8-validate'];

/** Lets bundled CommonJS dependencies `require` node built-ins from an ES module. */
const BANNER =
  "import { createRequire as sbxCreateRequire } from 'node:module'; const require = sbxCreateRequire(import.meta.url);";

/**
 * Loaded before the agent (`node --import`): the agent dies with the broker even when the
 * broker is SIGKILLed, because the broker holds the write end of the agent's stdin and the
 * kernel closes it. SIGTERM lets the agent stop its user processes; exit if it hangs.
 */
const PARENT_WATCH = `process.stdin.on('end', () => {
  process.kill(process.pid, 'SIGTERM');
  setTimeout(() => process.exit(1), 5000).unref();
});
process.stdin.on('error', () => process.kill(process.pid, 'SIGTERM'));
process.stdin.resume();
process.stdin.unref?.();
`;

const Metafile = z.object({ metafile: z.object({ inputs: z.record(z.string(), z.unknown()) }) });
const Stamp = z.object({ recipe: z.string(), inputs: z.record(z.string(), z.string()) });
type Stamp = z.infer<typeof Stamp>;

interface Esbuild {
  readonly version: string;
  build(options: Record<string, unknown>): Promise<unknown>;
}

function isEsbuild(value: unknown): value is Esbuild {
  return typeof value === 'object' && value !== null && 'build' in value && typeof value.build === 'function';
}

/** esbuild comes with tsx (a root dev dependency); the broker adds no dependency for it. */
function loadEsbuild(): Esbuild {
  const fromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
  const fromTsx = createRequire(fromRoot.resolve('tsx/package.json'));
  const esbuild: unknown = fromTsx('esbuild');
  if (!isEsbuild(esbuild)) throw new Error('esbuild found next to tsx has no build()');
  return esbuild;
}

/** Resolves externals from the agent's package, so the bundle finds them from anywhere. */
function externalsFromAgent(): Record<string, unknown> {
  const fromAgent = createRequire(path.join(AGENT_DIR, 'package.json'));
  // A package's subpaths too (node-pty/lib/utils.js loads the native binding).
  const filter = new RegExp(`^(${EXTERNAL_MODULES.join('|')})(/.*)?$`);
  return {
    name: 'agent-externals',
    setup(build: {
      onResolve(options: { filter: RegExp }, resolve: (args: { path: string }) => unknown): void;
    }) {
      build.onResolve({ filter }, (args) => {
        try {
          return { path: fromAgent.resolve(args.path), external: true };
        } catch {
          return { path: args.path, external: true };
        }
      });
    },
  };
}

async function fingerprint(file: string): Promise<string> {
  const entry = await stat(path.resolve(REPO_ROOT, file)).catch(() => undefined);
  return entry === undefined ? 'missing' : `${entry.size}:${entry.mtimeMs}`;
}

async function isFresh(stampFile: string, bundleFile: string, recipe: string): Promise<boolean> {
  const text = await readFile(stampFile, 'utf8').catch(() => undefined);
  if (text === undefined || (await stat(bundleFile).catch(() => undefined)) === undefined) return false;
  const stamp = Stamp.safeParse(JSON.parse(text));
  if (!stamp.success || stamp.data.recipe !== recipe) return false;
  const files = Object.entries(stamp.data.inputs);
  const now = await Promise.all(files.map(([file]) => fingerprint(file)));
  return files.every(([, was], i) => now[i] === was);
}

async function buildBundle(
  esbuild: Esbuild,
  bundleFile: string,
  stampFile: string,
  recipe: string,
): Promise<void> {
  const temp = `${bundleFile}.${randomBytes(6).toString('hex')}.tmp`;
  const result = Metafile.parse(
    await esbuild.build({
      entryPoints: [AGENT_ENTRY],
      absWorkingDir: REPO_ROOT,
      outfile: temp,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      minify: true,
      metafile: true,
      logLevel: 'silent',
      banner: { js: BANNER },
      plugins: [externalsFromAgent(), ...bundleTrims(path.join(REPO_ROOT, 'packages'))],
    }),
  );
  const files = Object.keys(result.metafile.inputs);
  const prints = await Promise.all(files.map((file) => fingerprint(file)));
  const stamp: Stamp = {
    recipe,
    inputs: Object.fromEntries(files.map((file, i) => [file, prints[i] ?? 'missing'])),
  };
  await rename(temp, bundleFile);
  await writeAtomically(stampFile, JSON.stringify(stamp));
}

/** An agent starting concurrently (another broker, another provider) never reads a half-written file. */
async function writeAtomically(file: string, text: string): Promise<void> {
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temp, text);
  await rename(temp, file);
}

/** Builds (or reuses) `<dataDir>/agent-bundle/agent.mjs` and says how to run it. */
export async function prepareAgentBundle(dataDir: string): Promise<AgentCommand> {
  const dir = path.join(dataDir, 'agent-bundle');
  const bundleFile = path.join(dir, 'agent.mjs');
  const stampFile = path.join(dir, 'agent.stamp.json');
  const watchFile = path.join(dir, 'parent-watch.mjs');
  try {
    const esbuild = loadEsbuild();
    const recipe = JSON.stringify({
      esbuild: esbuild.version,
      entry: AGENT_ENTRY,
      EXTERNAL_MODULES,
      BANNER,
      BUNDLE_TRIMS,
    });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (!(await isFresh(stampFile, bundleFile, recipe)))
      await buildBundle(esbuild, bundleFile, stampFile, recipe);
    await writeAtomically(watchFile, PARENT_WATCH);
  } catch (err) {
    await rm(stampFile, { force: true });
    throw providerUnavailable('could not build the sandbox agent', err);
  }
  return { file: process.execPath, args: ['--import', pathToFileURL(watchFile).href, bundleFile] };
}
