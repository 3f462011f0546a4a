// What a team outside this monorepo gets: each publishable package packed with `pnpm pack`
// (its prepack builds dist/), the tarballs installed with npm into an empty project in the
// temp directory, and used from there: the `sbx` bin, the SDK from ESM, CommonJS and
// TypeScript, and the installed SDK against a real broker served by this test process.
// Slow by nature (one `npm install` from the registry); see docs/packages.md.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRealBroker, type RealBroker } from '../../packages/client/test/support.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** The published packages, by directory under packages/; dependencies before dependents. */
const PACKAGES = ['protocol', 'tokens', 'client', 'mcp', 'langgraph', 'cli'] as const;
type PackageDir = (typeof PACKAGES)[number];
/** Packages whose import gives an API (the CLI publishes a bin only). */
const LIBRARIES = PACKAGES.filter((p) => p !== 'cli');
const PNPM = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).packageManager as string;
const TSC = path.join(root, 'node_modules/.bin/tsc');
const INSTALL_TIMEOUT_MS = 15 * 60_000;

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  engines?: Record<string, string>;
  exports?: Record<string, unknown>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

interface Packed {
  readonly dir: PackageDir;
  readonly tarball: string;
  /** The tarball's files, relative to its `package/` folder. */
  readonly files: readonly string[];
  readonly manifestText: string;
  readonly manifest: Manifest;
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

let work: string;
let project: string;
const packed = new Map<PackageDir, Packed>();

/**
 * The environment of a consumer's command: no settings leaked from the runner (jest's
 * NODE_OPTIONS, pnpm's npm_* variables, the developer's SBX_*), the registry setting kept.
 */
function consumerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(
    ([name]) =>
      name !== 'NODE_OPTIONS' &&
      !name.startsWith('SBX_') &&
      (!name.startsWith('npm_') || name === 'npm_config_registry' || name === 'npm_config_cache'),
  );
  return { ...Object.fromEntries(kept), ...extra };
}

/** Runs a command to its end without blocking the event loop (the broker is served from here). */
function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env ?? consumerEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}

/** The run's output, for a failed expectation's message. */
const shown = (result: Run): string =>
  `exit ${String(result.code)}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;

function expectSuccess(result: Run): void {
  if (result.code !== 0) throw new Error(`command failed: ${shown(result)}`);
}

/** Packs one package with the repo's pnpm (which runs its prepack build) into `dest`. */
function pack(dir: PackageDir, dest: string, extractRoot: string): Packed {
  const before = new Set(readdirSync(dest));
  const result = spawnSync('npx', ['--yes', PNPM, 'pack', '--pack-destination', dest], {
    cwd: path.join(root, 'packages', dir),
    env: consumerEnv(),
    encoding: 'utf8',
    timeout: 5 * 60_000,
  });
  if (result.status !== 0) {
    throw new Error(
      `pnpm pack in packages/${dir} failed (${String(result.status)}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  const added = readdirSync(dest).filter((name) => name.endsWith('.tgz') && !before.has(name));
  if (added.length !== 1)
    throw new Error(`pnpm pack in packages/${dir} made ${added.length} tarballs: ${added.join(', ')}`);
  const tarball = path.join(dest, added[0] as string);
  const into = path.join(extractRoot, dir);
  mkdirSync(into, { recursive: true });
  const tar = spawnSync('tar', ['-xzf', tarball, '-C', into], { encoding: 'utf8' });
  if (tar.status !== 0) throw new Error(`tar failed on ${tarball}: ${tar.stderr}`);
  const files = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((line) => line !== '' && !line.endsWith('/'))
    .map((line) => line.replace(/^package\//, ''));
  const manifestText = readFileSync(path.join(into, 'package', 'package.json'), 'utf8');
  return { dir, tarball, files, manifestText, manifest: JSON.parse(manifestText) as Manifest };
}

/** Every file path an `exports` value names, whatever its conditions. */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value === null || typeof value !== 'object') return [];
  return Object.values(value).flatMap(exportTargets);
}

beforeAll(
  async () => {
    work = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-packaging-')));
    const tarballs = path.join(work, 'tarballs');
    const extracted = path.join(work, 'extracted');
    project = path.join(work, 'project');
    for (const dir of [tarballs, extracted, project]) mkdirSync(dir, { recursive: true });
    for (const dir of PACKAGES) packed.set(dir, pack(dir, tarballs, extracted));
    expectSuccess(await run('npm', ['init', '-y'], { cwd: project }));
    // One install of all the tarballs, as a consumer would add them (peers come along: npm ≥ 7).
    const install = await run(
      'npm',
      ['install', '--no-audit', '--no-fund', ...[...packed.values()].map((p) => p.tarball)],
      { cwd: project, timeoutMs: INSTALL_TIMEOUT_MS },
    );
    expectSuccess(install);
  },
  INSTALL_TIMEOUT_MS + 5 * 60_000,
);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the packed tarballs', () => {
  it.each(PACKAGES)('@sbx/%s: no workspace: ranges, not private, Node ≥ 20, built JavaScript only', (dir) => {
    const { manifest, manifestText, files } = packed.get(dir) as Packed;
    expect(manifestText).not.toContain('workspace:');
    expect(manifest.private).toBeUndefined();
    expect(manifest.engines?.['node']).toBe('>=20.11');
    const sbxDependencies = Object.keys(manifest.dependencies ?? {}).filter((name) =>
      name.startsWith('@sbx/'),
    );
    for (const name of sbxDependencies)
      expect([name, manifest.dependencies?.[name]]).toEqual([name, manifest.version]);
    expect(files).toContain('README.md');
    expect(files).toContain('package.json');
    // No TypeScript source, no tests: dist/ holds .js and .d.ts only (the CLI's bundle also the
    // licenses of the packages inside it).
    const stray = files.filter(
      (f) =>
        f !== 'README.md' &&
        f !== 'package.json' &&
        !/^dist\/.+\.(js|d\.ts)$/.test(f) &&
        !(dir === 'cli' && f === 'dist/THIRD-PARTY-NOTICES.txt'),
    );
    expect(stray).toEqual([]);
    expect(JSON.stringify(manifest.exports ?? {})).not.toMatch(/src\/|(?<!\.d)\.ts"/);
  });

  it.each(LIBRARIES)(
    '@sbx/%s: exports name built JavaScript and declarations that are in the tarball',
    (dir) => {
      const { manifest, files } = packed.get(dir) as Packed;
      expect(manifest.exports?.['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
      // Any further subpath the package adds must name built files in the tarball too.
      for (const target of exportTargets(manifest.exports)) {
        expect(target).toMatch(/^\.\/dist\/.+\.(js|d\.ts)$/);
        expect(files).toContain(target.replace(/^\.\//, ''));
      }
    },
  );

  it('@sbx/cli: the bin `sbx` is the built dist/bin.js; nothing to import', () => {
    const { manifest, files } = packed.get('cli') as Packed;
    expect(manifest.bin).toEqual({ sbx: './dist/bin.js' });
    expect(files).toContain('dist/bin.js');
    // One bundle (scripts/build-cli.mjs): the third-party code inside it comes with its licenses.
    expect(files).toContain('dist/THIRD-PARTY-NOTICES.txt');
    expect(manifest.exports).toEqual({ './package.json': './package.json' });
    const extractedBin = path.join(work, 'extracted', 'cli', 'package', 'dist', 'bin.js');
    expect(readFileSync(extractedBin, 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
  });

  it('@sbx/langgraph: LangChain packages are peer dependencies', () => {
    const { manifest } = packed.get('langgraph') as Packed;
    for (const name of ['@langchain/core', '@langchain/langgraph', 'deepagents', 'langchain']) {
      expect(manifest.peerDependencies?.[name]).toBeDefined();
      expect(manifest.dependencies?.[name]).toBeUndefined();
    }
  });
});

describe('installed into an empty npm project', () => {
  it('resolves every package to its installed dist/, never to the monorepo', () => {
    for (const dir of PACKAGES) {
      const installed = path.join(project, 'node_modules', '@sbx', dir);
      expect(realpathSync(installed)).toBe(installed);
      expect(existsSync(path.join(installed, 'src'))).toBe(false);
    }
  });

  it("npm installed @sbx/langgraph's LangChain peers next to it", () => {
    const peers = Object.keys((packed.get('langgraph') as Packed).manifest.peerDependencies ?? {});
    expect(peers.length).toBeGreaterThan(0);
    const missing = peers.filter(
      (name) => !existsSync(path.join(project, 'node_modules', name, 'package.json')),
    );
    expect(missing).toEqual([]);
  });

  it('`npx sbx --help` prints the usage and exits 0', async () => {
    // `--no`: never fetch some other `sbx` from the registry should the bin be missing.
    const result = await run('npx', ['--no', '--', 'sbx', '--help'], { cwd: project });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('sbx: shared sandboxes from the terminal');
    expect(result.stdout).toContain('sbx login --broker <url>');
  });

  it('ESM: imports every library by name from its installed dist/index.js', async () => {
    const script = path.join(project, 'esm-check.mjs');
    writeFileSync(
      script,
      [
        "import { BrokerClient, BrokerSession, SandboxClient, readEnvDefaults } from '@sbx/client';",
        "import { ROUTES, Id } from '@sbx/protocol';",
        "import { mintCapabilityToken } from '@sbx/tokens';",
        "import * as mcp from '@sbx/mcp';",
        "import * as langgraph from '@sbx/langgraph';",
        'const kinds = { BrokerClient, BrokerSession, SandboxClient, readEnvDefaults, ROUTES, Id, mintCapabilityToken };',
        'const resolved = {};',
        `for (const name of ${JSON.stringify(LIBRARIES)}) resolved[name] = import.meta.resolve('@sbx/' + name);`,
        'console.log(JSON.stringify({',
        '  kinds: Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, typeof v])),',
        '  namespaces: [typeof mcp, typeof langgraph],',
        '  resolved,',
        '}));',
      ].join('\n'),
    );
    const result = await run(process.execPath, [script], { cwd: project });
    expectSuccess(result);
    const out = JSON.parse(result.stdout) as {
      kinds: Record<string, string>;
      namespaces: string[];
      resolved: Record<string, string>;
    };
    expect(out.kinds).toEqual({
      BrokerClient: 'function',
      BrokerSession: 'function',
      SandboxClient: 'function',
      readEnvDefaults: 'function',
      ROUTES: 'object',
      Id: 'object',
      mintCapabilityToken: 'function',
    });
    expect(out.namespaces).toEqual(['object', 'object']);
    for (const dir of LIBRARIES) {
      expect(out.resolved[dir]).toBe(`file://${project}/node_modules/@sbx/${dir}/dist/index.js`);
    }
  });

  it('TypeScript: a consumer type-checks against the installed declarations, which are real types', async () => {
    writeFileSync(
      path.join(project, 'consumer.ts'),
      [
        "import { BrokerClient, BrokerSession, type SandboxClient } from '@sbx/client';",
        "import { Id } from '@sbx/protocol';",
        "import { mintCapabilityToken } from '@sbx/tokens';",
        '',
        "const broker = new BrokerClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'sbx_key' });",
        'export async function writeHello(): Promise<string> {',
        '  await using session = await BrokerSession.ensure(broker, {',
        "    scope: { type: 'thread', id: Id.parse('thr_1') },",
        "    actor: { type: 'agent', id: 'agt_1' },",
        '  });',
        '  const sandbox: SandboxClient = session.sandbox();',
        "  const info = await sandbox.files.write('hello.txt', 'hi');",
        '  return info.path;',
        '}',
        'export const mint: typeof mintCapabilityToken = mintCapabilityToken;',
        '// @ts-expect-error: the declarations give real types, not `any`',
        'export const wrong: number = broker;',
        '',
      ].join('\n'),
    );
    // skipLibCheck as most projects (and `tsc --init`) have it: the consumer's own code is
    // checked against the declarations; no @types/node needed for this file.
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          lib: ['ES2023', 'ESNext.Disposable'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        files: ['consumer.ts'],
      }),
    );
    const result = await run(TSC, ['-p', project], { cwd: project });
    expect(shown(result)).toBe(shown({ code: 0, stdout: '', stderr: '' }));
  });
});

// require() of an ES module works unflagged from Node 20.19 / 22.12 on; earlier Nodes (the
// packages allow ≥ 20.11) must import() them: the packages are ES modules only.
// Asked of a plain node (jest's copy of `process` does not carry `features.require_module`).
const requireEsm =
  spawnSync(process.execPath, ['-p', 'process.features.require_module === true'], {
    encoding: 'utf8',
    env: consumerEnv(),
  }).stdout.trim() === 'true';
const describeWithRequireEsm = requireEsm ? describe : describe.skip;

describeWithRequireEsm(
  `CommonJS interop${requireEsm ? '' : ` (skipped: Node ${process.version} has no require(esm); CommonJS code must import() the packages)`}`,
  () => {
    it("require('@sbx/client') and require('@sbx/tokens') load the installed packages", async () => {
      const script = path.join(project, 'cjs-check.cjs');
      writeFileSync(
        script,
        [
          "const { BrokerClient, BrokerSession, SandboxClient } = require('@sbx/client');",
          "const { mintCapabilityToken } = require('@sbx/tokens');",
          'console.log([BrokerClient, BrokerSession, SandboxClient, mintCapabilityToken].map((v) => typeof v).join(","));',
        ].join('\n'),
      );
      const result = await run(process.execPath, ['--no-warnings', script], { cwd: project });
      expectSuccess(result);
      expect(result.stdout.trim()).toBe('function,function,function,function');
    });
  },
);

describe('the installed packages against a real broker', () => {
  let real: RealBroker | undefined;

  beforeAll(async () => {
    real = await startRealBroker();
  }, 180_000);

  afterAll(async () => {
    await real?.close();
  }, 60_000);

  const brokerEnv = (): Record<string, string> => {
    if (real === undefined) throw new Error('no broker');
    return { SBX_BROKER_URL: real.harness.url, SBX_API_KEY: real.apiKey };
  };

  it('the installed @sbx/client ensures a session, writes and reads a file, releases', async () => {
    const script = path.join(project, 'sdk-run.mjs');
    writeFileSync(
      script,
      [
        "import { BrokerClient, BrokerSession } from '@sbx/client';",
        'const broker = new BrokerClient(); // SBX_BROKER_URL, SBX_API_KEY',
        'const session = await BrokerSession.ensure(broker, {',
        "  scope: { type: 'thread', id: 'thr_packaging' },",
        "  actor: { type: 'agent', id: 'agt_packaging' },",
        '});',
        'try {',
        '  const sandbox = session.sandbox();',
        "  const written = await sandbox.files.write('notes/hello.txt', 'hello from an installed SDK\\n');",
        "  const text = await sandbox.files.readText('notes/hello.txt');",
        '  console.log(JSON.stringify({ path: written.path, text, workspace: session.workspacePath }));',
        '} finally {',
        '  await session.release();',
        '}',
        'process.exit(0);',
      ].join('\n'),
    );
    const result = await run(process.execPath, [script], { cwd: project, env: consumerEnv(brokerEnv()) });
    expectSuccess(result);
    const out = JSON.parse(result.stdout) as { path: string; text: string; workspace: string };
    expect(out.text).toBe('hello from an installed SDK\n');
    expect(out.path).toBe(`${out.workspace}/notes/hello.txt`);
  }, 120_000);

  it('the installed `sbx` logs in, ensures a sandbox, copies a file into a sandbox, reads it back, releases', async () => {
    const env = consumerEnv({ SBX_HOME: path.join(work, 'sbx-home') });
    const sbx = (...args: string[]): Promise<Run> =>
      run('npx', ['--no', '--', 'sbx', ...args], { cwd: project, env });
    const { SBX_BROKER_URL, SBX_API_KEY } = brokerEnv();
    expectSuccess(
      await sbx('login', '--broker', SBX_BROKER_URL as string, '--api-key', SBX_API_KEY as string),
    );
    expectSuccess(await sbx('ensure', 'thr_packaging_cli'));
    writeFileSync(path.join(project, 'local.txt'), 'copied by the installed CLI\n');
    expectSuccess(await sbx('cp', 'local.txt', 'thr_packaging_cli:local.txt'));
    const cat = await sbx('cat', 'thr_packaging_cli:local.txt');
    expectSuccess(cat);
    expect(cat.stdout).toBe('copied by the installed CLI\n');
    expectSuccess(await sbx('release', 'thr_packaging_cli'));
  }, 120_000);

  it('the installed @sbx/langgraph backend runs a deep agent that writes and runs a file in its sandbox', async () => {
    const out = await runInstalledLanggraphBackend(project, brokerEnv());
    expect(out.executed).toContain('from an installed deep agent');
    expect(out.readBack).toBe('print("from an installed deep agent")\n');
  }, 180_000);
});

/**
 * A deep agent (deepagents' createDeepAgent, a scripted fakeModel from the installed
 * @langchain/core) on the installed @sbx/langgraph backend: it writes a file with its file
 * tool and runs it with its shell tool; the script reads the file back over the SDK.
 */
async function runInstalledLanggraphBackend(
  cwd: string,
  env: Record<string, string>,
): Promise<{ executed: string; readBack: string }> {
  const script = path.join(cwd, 'langgraph-run.mjs');
  copyFileSync(path.join(root, 'scripts/test/fixtures/langgraph-run.mjs'), script);
  const result = await run(process.execPath, [script], { cwd, env: consumerEnv(env) });
  expectSuccess(result);
  return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as {
    executed: string;
    readBack: string;
  };
}
