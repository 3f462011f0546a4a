// The broker as `pnpm start` and the broker image run it (docs/deploy.md "Broker image"):
// the bundle of scripts/build-broker.mjs under plain node, started from a directory outside
// the repository on embedded defaults (PGlite, in-process coordination). It must find its
// migrations and the agent's sources by itself, and carry a command to a sandbox.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { newDataDirOutsideTmp, removeDataDir } from '../providers/local-provider-kit.js';
import { operatorKey, startBrokerProcess, type BrokerProcess } from './broker-process.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** Inside services/broker, where the bundle's packages resolve; dist/ is ignored by git. */
function buildBundle(): string {
  const outDir = path.join(root, 'services', 'broker', 'dist', `test-${randomBytes(4).toString('hex')}`);
  const build = spawnSync(process.execPath, ['scripts/build-broker.mjs', outDir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`scripts/build-broker.mjs failed:\n${build.stderr}`);
  return outDir;
}

describe('the bundled broker (pnpm start, the broker image)', () => {
  const outDir = buildBundle();
  const dataDir = newDataDirOutsideTmp();
  const adminKey = operatorKey();
  let broker: BrokerProcess | undefined;

  beforeAll(async () => {
    const env = { BROKER_DATA_DIR: dataDir, BROKER_BOOTSTRAP_API_KEY: adminKey };
    broker = await startBrokerProcess(env, { bundle: path.join(outDir, 'main.mjs'), cwd: dataDir });
  });
  afterAll(async () => {
    await broker?.kill('SIGTERM');
    removeDataDir(dataDir);
    rmSync(outDir, { recursive: true, force: true });
  });

  const post = (route: string, body: unknown) =>
    fetch(`${broker!.url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('is JavaScript with the workspace packages inside: no TypeScript is compiled at start', () => {
    const text = readFileSync(path.join(outDir, 'main.mjs'), 'utf8');
    expect(text).not.toMatch(/from\s*["']@sbx\//);
    expect(text).not.toMatch(/from\s*["'][^"']+\.ts["']/);
    expect(text).toMatch(/from\s*["']express["']/);
  });

  it("imports only packages the broker declares, which resolve from the broker's own node_modules", () => {
    const text = readFileSync(path.join(outDir, 'main.mjs'), 'utf8');
    const imported = new Set<string>();
    for (const [, specifier] of text.matchAll(
      /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)["']([^"'./][^"']*)["']/g,
    )) {
      if (
        specifier === undefined ||
        specifier.startsWith('node:') ||
        builtinModules.includes(specifier.split('/')[0]!)
      )
        continue;
      imported.add(
        specifier
          .split('/')
          .slice(0, specifier.startsWith('@') ? 2 : 1)
          .join('/'),
      );
    }
    const manifest = JSON.parse(
      readFileSync(path.join(root, 'services', 'broker', 'package.json'), 'utf8'),
    ) as {
      dependencies: Record<string, string>;
    };
    expect(imported.size).toBeGreaterThan(5);
    expect([...imported].filter((name) => manifest.dependencies[name] === undefined)).toEqual([]);
  });

  it('is ready on embedded defaults, its migrations applied, wherever it was started from', async () => {
    const res = await fetch(`${broker!.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      status: 'ok',
      checks: { database: 'ok', coordination: 'ok', migrations: 'ok' },
    });
  });

  it("makes a thread's sandbox with the repository's agent and runs a command in it", async () => {
    const thread = `thr_bundle_${randomBytes(4).toString('hex')}`;
    const session = await post('/v1/sandbox/sessions', { thread_id: thread, mode: 'ensure' });
    expect(session.status).toBe(200);
    const { sandbox } = (await session.json()) as { sandbox: { id: string } };
    const ran = await post(`/v1/sandboxes/${sandbox.id}/commands`, {
      cmd: 'echo bundled > note.txt && cat note.txt',
      timeout_ms: 20_000,
    });
    expect(ran.status).toBe(200);
    expect(await ran.json()).toMatchObject({ exit_code: 0, stdout: 'bundled\n' });
  });

  it('has new-api-key as a bundle too: one key in the broker format on stdout', () => {
    const run = spawnSync(process.execPath, [path.join(outDir, 'new-api-key.mjs')], {
      cwd: dataDir,
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^sbk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n$/);
  });
});
