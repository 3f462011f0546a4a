// `node scripts/build-agent.mjs <out-dir>`: the sandbox agent as the agent image runs it
// (deploy/docker/agent.Dockerfile): `<out-dir>/main.mjs`, one ES module bundled by esbuild
// the way services/broker/src/providers/agent-bundle.ts bundles it for the local provider,
// and `<out-dir>/node_modules/node-pty`, the one native module, copied next to it. Unlike
// the local provider's bundle, externals stay bare specifiers, so the directory runs from
// anywhere (it is copied to /opt/sbx/agent in the image) without this repository.
import { cpSync, mkdirSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ESM_REQUIRE_BANNER, loadEsbuild, REPO_ROOT } from './esbuild-kit.mjs';

const AGENT_DIR = path.join(REPO_ROOT, 'services', 'agent');
const AGENT_ENTRY = path.join(AGENT_DIR, 'src', 'main.ts');

/** Native or optional modules: loaded at run time from `<out-dir>/node_modules` (ws works without the optional two). */
const EXTERNAL_MODULES = ['node-pty', 'bufferutil', 'utf-8-validate'];

/** What of node-pty runs on Linux: its JavaScript and the compiled binding (sources and build tools stay behind). */
const NODE_PTY_FILES = ['package.json', 'LICENSE', 'lib', path.join('build', 'Release', 'pty.node')];

/** The node-pty the agent depends on (pnpm's patched, locally compiled copy). */
function nodePtyDir() {
  const fromAgent = createRequire(path.join(AGENT_DIR, 'package.json'));
  return realpathSync(path.dirname(fromAgent.resolve('node-pty/package.json')));
}

function copyNodePty(outDir) {
  const from = nodePtyDir();
  const to = path.join(outDir, 'node_modules', 'node-pty');
  rmSync(to, { recursive: true, force: true });
  for (const file of NODE_PTY_FILES) {
    mkdirSync(path.dirname(path.join(to, file)), { recursive: true });
    cpSync(path.join(from, file), path.join(to, file), { recursive: true, dereference: true });
  }
}

async function buildAgent(outDir) {
  mkdirSync(outDir, { recursive: true });
  await loadEsbuild().build({
    entryPoints: [AGENT_ENTRY],
    absWorkingDir: REPO_ROOT,
    outfile: path.join(outDir, 'main.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    logLevel: 'warning',
    banner: { js: ESM_REQUIRE_BANNER },
    external: EXTERNAL_MODULES.flatMap((name) => [name, `${name}/*`]),
  });
  copyNodePty(outDir);
}

const outDir = process.argv[2];
if (outDir === undefined || process.argv.length > 3) {
  process.stderr.write('usage: node scripts/build-agent.mjs <out-dir>\n');
  process.exit(2);
}
try {
  await buildAgent(path.resolve(outDir));
  process.stdout.write(`agent bundle written to ${path.resolve(outDir)}\n`);
} catch (err) {
  process.stderr.write(`build-agent: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
