import path from 'node:path';

/**
 * What the agent bundle leaves out (esbuild plugins). V8 keeps a script's whole source in
 * the heap for lazy compilation and runs every bundled ES module's top level at start, so
 * code an agent never runs still costs every sandbox memory (bench/providers measures it).
 */

interface ResolveArgs {
  readonly path: string;
  readonly importer: string;
  readonly resolveDir: string;
  readonly kind: string;
  readonly pluginData?: unknown;
}

interface PluginBuild {
  onResolve(options: { filter: RegExp }, resolve: (args: ResolveArgs) => unknown): void;
  onLoad(options: { filter: RegExp; namespace: string }, load: (args: { path: string }) => unknown): void;
  resolve(path: string, options: Omit<ResolveArgs, 'path'>): Promise<{ path: string }>;
}

interface Plugin {
  readonly name: string;
  setup(build: PluginBuild): void;
}

/** Part of the bundle's recipe: a change here rebuilds bundles made before it. */
export const BUNDLE_TRIMS = ['side-effect-free-packages', 'zod-english-only', 'tables-left-on-disk'];

/** Marks a resolution the plugin asked for itself, so it does not answer it again. */
const INNER = Symbol('side-effect-free');

/**
 * The workspace packages (@sbx/protocol, tokens, service-kit) run nothing on import but
 * building their values: declared side-effect free, their modules the agent never imports
 * (the broker's admin, session, route and OpenAPI schemas) are left out, and with them
 * the zod schemas every agent would build at start (−4 MiB per fresh sandbox).
 */
function sideEffectFreePackages(packagesDir: string): Plugin {
  const inside = packagesDir + path.sep;
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
 * zod's `z.locales` holds ~50 translations of its messages, each an ES module run at start
 * (−7 MiB per fresh sandbox, 264 KB of source): the agent keeps English only, which zod
 * sets by default and its answers use. `z.locales.en` stays; any other locale is absent.
 */
function zodEnglishOnly(): Plugin {
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

const ICONV_ENCODINGS = /[/\\]iconv-lite[/\\]encodings$/;

/**
 * iconv-lite's East Asian code tables (~400 KB of JSON) stay on disk, required by absolute
 * path on first use: only a body in Shift_JIS or Big5 would read them, which the agent's
 * JSON parser refuses anyway (−1 MiB per sandbox).
 */
function tablesLeftOnDisk(): Plugin {
  return {
    name: 'tables-left-on-disk',
    setup(build) {
      build.onResolve({ filter: /^\.\/tables\/[\w-]+\.json$/ }, (args) =>
        ICONV_ENCODINGS.test(args.resolveDir)
          ? { path: path.join(args.resolveDir, args.path), external: true }
          : undefined,
      );
    },
  };
}

/** The plugins, in the order they must run; `packagesDir` is the repository's `packages/`. */
export function bundleTrims(packagesDir: string): Plugin[] {
  return [sideEffectFreePackages(packagesDir), zodEnglishOnly(), tablesLeftOnDisk()];
}
