// `node scripts/pack-packages.mjs [out-dir]` (root script: `npx -y pnpm@12.4.2 pack-packages <out-dir>`):
// builds and packs the six published packages (docs/packages.md) into installable tarballs, for
// projects outside this repository while nothing is published to a registry. Each package is
// packed with `pnpm pack` (its prepack builds dist/; pnpm writes the tarball's package.json from
// publishConfig and turns `workspace:*` into exact versions), dependencies first. Then it prints,
// for each package, the one `npm install` line that brings the @sbx packages it depends on along:
// those are not on any registry either, so npm must be given their tarballs in the same command.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The published packages, by directory under packages/; dependencies before dependents. */
export const PUBLISHED = ['protocol', 'tokens', 'client', 'mcp', 'langgraph', 'cli'];
const PNPM = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).packageManager;
/** What a user reaches for, in the order the install lines are printed. */
const USES = [
  ['client', 'the SDK'],
  ['cli', 'the `sbx` command'],
  ['mcp', 'the MCP server'],
  ['langgraph', 'the LangGraph backend (its LangChain peers come along with npm >= 7)'],
  ['tokens', 'capability tokens'],
  ['protocol', 'the wire schemas'],
];

function manifestOf(dir) {
  return JSON.parse(readFileSync(path.join(ROOT, 'packages', dir, 'package.json'), 'utf8'));
}

/** pnpm's tarball name: `@sbx/client` 0.1.0 → `sbx-client-0.1.0.tgz`. */
function tarballName(manifest) {
  return `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`;
}

/** Without the settings of a pnpm or npm run around this script, which would confuse npx. */
function cleanEnv() {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !name.startsWith('npm_') || name === 'npm_config_registry' || name === 'npm_config_cache',
    ),
  );
}

function pack(dir, outDir) {
  const manifest = manifestOf(dir);
  process.stderr.write(`packing ${manifest.name} (building dist/)…\n`);
  const result = spawnSync('npx', ['--yes', PNPM, 'pack', '--pack-destination', outDir], {
    cwd: path.join(ROOT, 'packages', dir),
    env: cleanEnv(),
    encoding: 'utf8',
  });
  const tarball = path.join(outDir, tarballName(manifest));
  if (result.status !== 0 || !existsSync(tarball)) {
    throw new Error(
      `pnpm pack in packages/${dir} failed (exit ${String(result.status)}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  return { dir, name: manifest.name, tarball, manifest };
}

/** The package and every @sbx package it depends on, dependencies first. */
function closure(dir, packedByName) {
  const order = [];
  const visit = (name) => {
    const packed = packedByName.get(name);
    if (packed === undefined || order.includes(packed)) return;
    for (const dependency of Object.keys(packed.manifest.dependencies ?? {})) visit(dependency);
    order.push(packed);
  };
  visit(manifestOf(dir).name);
  return order;
}

/** The `npm install` line of each package, with the tarballs of its @sbx dependencies. */
export function installLines(packed) {
  const byName = new Map(packed.map((p) => [p.name, p]));
  return USES.map(([dir, what]) => {
    const tarballs = closure(dir, byName).map((p) => p.tarball);
    return { name: manifestOf(dir).name, what, command: `npm install ${tarballs.join(' ')}` };
  });
}

export function packAll(outDir) {
  mkdirSync(outDir, { recursive: true });
  return PUBLISHED.map((dir) => pack(dir, outDir));
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = path.resolve(process.argv[2] ?? mkdtempSync(path.join(tmpdir(), 'sbx-packages-')));
  const packed = packAll(outDir);
  const lines = [`packed ${packed.length} packages into ${outDir}:`];
  for (const p of packed) lines.push(`  ${path.basename(p.tarball)}`);
  lines.push('', 'Install in your project (nothing is on a registry: each line names the tarballs');
  lines.push('of the @sbx packages that one depends on too):');
  for (const line of installLines(packed))
    lines.push('', `  # ${line.name}: ${line.what}`, `  ${line.command}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
