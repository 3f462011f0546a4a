// The esbuild plugins of the `sbx` bundle (scripts/build-cli.mjs): what it leaves out, and how
// the usage text is kept apart from the rest.
import path from 'node:path';
import { REPO_ROOT } from './esbuild-kit.mjs';

/** Marks a resolution the plugin asked for itself, so it does not answer it again. */
const INNER = Symbol('side-effect-free');

/**
 * The workspace packages run nothing on import but building their values: declared side-effect
 * free, the modules of @sbx/protocol, @sbx/client and @sbx/mcp the CLI never uses (the broker's
 * admin and route schemas, the OpenAPI document) are left out (the agent's bundle does the same:
 * services/broker/src/providers/agent-bundle-trims.ts).
 */
export function sideEffectFreePackages() {
  const inside = path.join(REPO_ROOT, 'packages') + path.sep;
  return {
    name: 'side-effect-free-packages',
    setup(build) {
      build.onResolve({ filter: /^(@sbx\/|\.)/ }, async (args) => {
        const fromPackage = args.importer.startsWith(inside) && args.path.startsWith('.');
        if (args.pluginData === INNER || !(args.path.startsWith('@sbx/') || fromPackage)) return undefined;
        const { path: resolved } = await build.resolve(args.path, {
          importer: args.importer,
          resolveDir: args.resolveDir,
          kind: args.kind,
          pluginData: INNER,
        });
        return resolved.startsWith(inside) ? { path: resolved, sideEffects: false } : undefined;
      });
    },
  };
}

const ZOD_V4 = /[/\\]zod[/\\]v4[/\\](classic|core|mini)$/;

/**
 * zod's `z.locales` holds ~50 translations of its messages (~250 KB of the bundle, all parsed
 * at every start): the CLI keeps English, zod's default, which its messages use.
 * `z.locales.en` stays; any other locale is absent (as in the agent's bundle).
 */
export function zodEnglishOnly() {
  return {
    name: 'zod-english-only',
    setup(build) {
      build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
        ZOD_V4.test(args.resolveDir)
          ? { path: path.join(args.resolveDir, '..', 'locales', 'index.js'), namespace: 'zod-english-only' }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
        contents: 'export { default as en } from "./en.js";',
        loader: 'js',
        resolveDir: path.dirname(args.path),
      }));
    },
  };
}

/** The bundle's own file that holds the usage text, next to bin.js. */
export const USAGE_FILE = 'usage.js';

/**
 * `sbx --help` (src/main.ts imports ./commands/help.js for it) loads `usage.js`, a bundle of
 * src/commands/help.ts alone. esbuild's code splitting assigns whole files to chunks: help.ts
 * imports `EXIT` from exit-codes.ts, whose other imports (the platform's error classes) reach
 * zod and the SDK, so inside the split bundle the usage text would load all of them. Bundled on
 * its own, tree shaking leaves the text and `EXIT` (plain values: nothing whose identity matters).
 */
export function usageApart(mainFile) {
  return {
    name: 'usage-apart',
    setup(build) {
      build.onResolve({ filter: /^\.\/commands\/help\.js$/ }, (args) =>
        args.importer === mainFile && args.kind === 'dynamic-import'
          ? { path: `./${USAGE_FILE}`, external: true }
          : undefined,
      );
    },
  };
}

/**
 * A module whose exports stand for another's and load it on first use: `require()` inside the
 * bundle is esbuild's lazily run module wrapper, so the real module (still in the bundle) runs
 * only then. `lazy` is the code of the stand-in; it gets `load()`, which returns the real one.
 */
function loadedOnFirstUse(name, { filter, applies, lazy }) {
  const namespace = `sbx-${name}`;
  return {
    name,
    setup(build) {
      build.onResolve({ filter }, async (args) => {
        if (args.kind !== 'import-statement' || !applies(args)) return undefined;
        const real = await build.resolve(args.path, {
          importer: args.importer,
          resolveDir: args.resolveDir,
          kind: 'require-call',
        });
        return real.errors.length > 0 ? undefined : { path: real.path, namespace };
      });
      build.onLoad({ filter: /.*/, namespace }, (args) => ({
        contents: `let real;\nconst load = () => (real ??= require(${JSON.stringify(args.path)}));\n${lazy}`,
        loader: 'js',
        resolveDir: path.dirname(args.path),
      }));
    },
  };
}

/**
 * ws, run when the first WebSocket is opened (or a constant of its class read): @sbx/client's
 * ws-channel.ts imports it at the top, so every command that talks to a sandbox would load it
 * (~12 ms of CPU at every start) though only `exec` (without `--json`), `shell` and `doctor`
 * open sockets. The stand-in is the class itself to `new`, static reads and `instanceof`.
 * Only imports from the workspace's own code (`importersUnder`) get it.
 */
export function wsOnFirstUse(importersUnder = path.join(REPO_ROOT, 'packages')) {
  return loadedOnFirstUse('ws-on-first-use', {
    filter: /^ws$/,
    applies: (args) => args.importer.startsWith(importersUnder + path.sep),
    lazy: `export const WebSocket = new Proxy(function WebSocket() {}, {
  construct: (_, args, target) => Reflect.construct(load().WebSocket, args, target),
  get: (_, key) => load().WebSocket[key],
});
export default WebSocket;`,
  });
}

/**
 * The MCP SDK's default JSON Schema validator builds an ajv instance (with ajv's formats) when a
 * server is made, and importing it runs ajv's ~100 modules (~10 ms of CPU). A server uses it only
 * to check a client's answer to an elicitation, which this server never asks for. The stand-in
 * makes the real validator, and with it ajv, at the first `getValidator` call.
 */
export function ajvOnFirstUse() {
  return loadedOnFirstUse('ajv-on-first-use', {
    filter: /[/\\]validation[/\\]ajv-provider\.js$/,
    applies: (args) =>
      /[/\\]@modelcontextprotocol[/\\]sdk[/\\]dist[/\\]esm[/\\]server[/\\]/.test(args.importer),
    lazy: `export class AjvJsonSchemaValidator {
  #args;
  #validator;
  constructor(...args) { this.#args = args; }
  getValidator(schema) {
    this.#validator ??= new (load().AjvJsonSchemaValidator)(...this.#args);
    return this.#validator.getValidator(schema);
  }
}`,
  });
}
