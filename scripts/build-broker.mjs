// `node scripts/build-broker.mjs [out-dir]`: the broker as `pnpm start` and the broker image
// run it (docs/deploy.md "Broker image"): `<out-dir>/main.mjs` and `<out-dir>/new-api-key.mjs`,
// ES modules bundled by esbuild from services/broker/src, with the workspace's own packages
// (@sbx/*, TypeScript sources) and Prisma's generated client inside. Every other package stays
// a bare import, resolved at run time from services/broker/node_modules, so `<out-dir>` must
// lie inside services/broker (default: services/broker/dist). Plain node runs the result: no
// TypeScript is compiled when the broker starts.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESM_REQUIRE_BANNER, loadEsbuild, REPO_ROOT } from './esbuild-kit.mjs';

const BROKER_DIR = path.join(REPO_ROOT, 'services', 'broker');
const ENTRIES = ['main', 'new-api-key'];

/** Bare imports other than the workspace's own packages stay imports. */
const thirdPartyExternal = {
  name: 'third-party-external',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@sbx/') || path.isAbsolute(args.path)
        ? undefined
        : { path: args.path, external: true },
    );
  },
};

export async function buildBroker(outDir = path.join(BROKER_DIR, 'dist')) {
  const out = path.resolve(outDir);
  if (path.relative(BROKER_DIR, out).startsWith('..') || out === BROKER_DIR)
    throw new Error(`the out dir must lie inside ${BROKER_DIR}, where the broker's packages resolve`);
  mkdirSync(out, { recursive: true });
  await loadEsbuild().build({
    entryPoints: Object.fromEntries(
      ENTRIES.map((name) => [name, path.join(BROKER_DIR, 'src', `${name}.ts`)]),
    ),
    absWorkingDir: REPO_ROOT,
    outdir: out,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Not minified: stack traces in the broker's logs keep their function names.
    logLevel: 'warning',
    banner: { js: ESM_REQUIRE_BANNER },
    plugins: [thirdPartyExternal],
  });
  return out;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildBroker(process.argv[2]);
}
