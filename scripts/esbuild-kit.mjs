// What the build scripts share (build-agent.mjs, build-broker.mjs): esbuild, and the banner
// that lets bundled CommonJS code `require` node built-ins from an ES module.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

export const ESM_REQUIRE_BANNER =
  "import { createRequire as sbxCreateRequire } from 'node:module'; const require = sbxCreateRequire(import.meta.url);";

/** esbuild comes with tsx (a root dev dependency): no dependency of its own. */
export function loadEsbuild() {
  const fromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
  const fromTsx = createRequire(fromRoot.resolve('tsx/package.json'));
  return fromTsx('esbuild');
}
