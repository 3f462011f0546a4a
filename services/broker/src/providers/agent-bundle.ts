import { randomBytes } from 'node:crypto';
import { chmod, cp, mkdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { REPO_ROOT } from '../repo-root.js';
import { BUNDLE_TRIMS, bundleTrims } from './agent-bundle-trims.js';
import { AGENT_CODE_DIR, isErrno } from '@sbx/service-kit';
import type { AgentCommand } from './agent-process.js';
import { providerUnavailable } from './provider.js';
import { traversableDir } from './sandbox-layout.js';

/**
 * Runs the agent of this repository as one pre-built file. `tsx services/agent/src/main.ts`
 * spends seconds compiling TypeScript on every start; a bundle run by plain node starts
 * in a fraction of that, which the cold-`ensure` target needs. The bundle is rebuilt
 * only when a file it was built from changed (esbuild's metafile lists them all).
 */

const AGENT_DIR = path.join(REPO_ROOT, 'services', 'agent');
const AGENT_ENTRY = path.join(AGENT_DIR, 'src', 'main.ts');

/**
 * Native or optional modules: loaded at run time from `node_modules` next to the bundle,
 * where node-pty is copied (the agent runs in the sandbox's view, where this repository
 * may not be visible; ws works without the optional two).
 */
const EXTERNAL_MODULES = ['node-pty', 'bufferutil', 'utf-8-validate'];

/** What of node-pty runs on Linux: its JavaScript and the compiled binding. */
const NODE_PTY_FILES = ['package.json', 'lib', path.join('build', 'Release', 'pty.node')];

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

/** The node-pty the agent depends on (pnpm's patched, locally compiled copy). */
async function nodePtyDir(): Promise<string> {
  const fromAgent = createRequire(path.join(AGENT_DIR, 'package.json'));
  return realpath(path.dirname(fromAgent.resolve('node-pty/package.json')));
}

/**
 * Copied aside, then moved into place: replicas started together on one data directory
 * copy at the same time, and two copies into one directory failed with EEXIST ("could not
 * build the sandbox agent", reliability/load). Their copies are the same files, so when
 * another one landed first (ENOTEMPTY, EEXIST) it is kept and this one dropped.
 */
async function copyNodePty(from: string, bundleDir: string): Promise<void> {
  const to = path.join(bundleDir, 'node_modules', 'node-pty');
  const temp = `${to}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    for (const file of NODE_PTY_FILES) {
      await mkdir(path.dirname(path.join(temp, file)), { recursive: true });
      await cp(path.join(from, file), path.join(temp, file), { recursive: true, dereference: true });
    }
    await rm(to, { recursive: true, force: true });
    await rename(temp, to).catch((err: unknown) => {
      if (!isErrno(err, 'ENOTEMPTY') && !isErrno(err, 'EEXIST')) throw err;
    });
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
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
      external: EXTERNAL_MODULES.flatMap((name) => [name, `${name}/*`]),
      plugins: bundleTrims(path.join(REPO_ROOT, 'packages')),
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
  await writeFile(temp, text, { mode: 0o644 });
  await rename(temp, file);
}

/** The agent's code: a directory bound into its view, and how to run it there or on the host. */
export interface AgentCode {
  readonly hostDir: string;
  /** Without a view (`LOCAL_ISOLATION=none`): host paths. */
  readonly hostCommand: AgentCommand;
  /** In the sandbox's view, where `hostDir` is AGENT_CODE_DIR. */
  readonly viewCommand: AgentCommand;
}

function commandIn(dir: string): AgentCommand {
  const watch = pathToFileURL(path.join(dir, 'parent-watch.mjs')).href;
  return { file: process.execPath, args: ['--import', watch, path.join(dir, 'agent.mjs')] };
}

/** A command of the operator's (tests): run as given, with an empty code directory bound. */
export async function customAgentCode(dataDir: string, command: AgentCommand): Promise<AgentCode> {
  const hostDir = await codeDirectory(dataDir);
  return { hostDir, hostCommand: command, viewCommand: command };
}

/** Readable by every sandbox's user (it is no secret), though the data directory is not listable. */
async function codeDirectory(dataDir: string): Promise<string> {
  const dir = path.join(dataDir, 'agent-bundle');
  await mkdir(dir, { recursive: true });
  await traversableDir(dir);
  await chmod(dir, 0o755);
  return dir;
}

/** Builds (or reuses) `<dataDir>/agent-bundle/agent.mjs` and says how to run it. */
export async function prepareAgentBundle(dataDir: string): Promise<AgentCode> {
  const dir = path.join(dataDir, 'agent-bundle');
  const bundleFile = path.join(dir, 'agent.mjs');
  const stampFile = path.join(dir, 'agent.stamp.json');
  const watchFile = path.join(dir, 'parent-watch.mjs');
  try {
    const esbuild = loadEsbuild();
    const nodePty = await nodePtyDir();
    const recipe = JSON.stringify({
      esbuild: esbuild.version,
      entry: AGENT_ENTRY,
      EXTERNAL_MODULES,
      BANNER,
      BUNDLE_TRIMS,
      nodePty,
      NODE_PTY_FILES,
    });
    await codeDirectory(dataDir);
    const copied = path.join(dir, 'node_modules', 'node-pty', 'package.json');
    if (
      !(await isFresh(stampFile, bundleFile, recipe)) ||
      (await stat(copied).catch(() => undefined)) === undefined
    ) {
      await copyNodePty(nodePty, dir);
      await buildBundle(esbuild, bundleFile, stampFile, recipe);
    }
    await writeAtomically(watchFile, PARENT_WATCH);
  } catch (err) {
    // Not thrown over the cause: a bundle directory that is not one fails this too.
    await rm(stampFile, { force: true }).catch(() => undefined);
    throw providerUnavailable('could not build the sandbox agent', err);
  }
  return { hostDir: dir, hostCommand: commandIn(dir), viewCommand: commandIn(AGENT_CODE_DIR) };
}
