// examples/sdk/hello-sandbox.mjs, the README's SDK example, as plain JavaScript under plain node
// against a real broker with real local sandboxes: it ensures a thread's sandbox, writes a file,
// runs it, reads what it wrote and releases. `@sbx/client` resolves to this workspace's package
// (TypeScript source, through tsx's loader); readme-walkthrough.test.ts runs the same file on
// the packed and installed package, as the README does.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startRealBroker, type RealBroker } from '../../packages/client/test/support.js';
import { ROOT } from './readme-blocks.js';

const EXAMPLE = path.join(ROOT, 'examples', 'sdk', 'hello-sandbox.mjs');
const TSX = pathToFileURL(createRequire(path.join(ROOT, 'package.json')).resolve('tsx')).href;

let broker: RealBroker | undefined;
let app: string;

beforeAll(async () => {
  broker = await startRealBroker();
  // A project of the user's: the example, and @sbx/client in its node_modules.
  app = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-sdk-example-')));
  mkdirSync(path.join(app, 'node_modules', '@sbx'), { recursive: true });
  symlinkSync(path.join(ROOT, 'packages', 'client'), path.join(app, 'node_modules', '@sbx', 'client'));
  copyFileSync(EXAMPLE, path.join(app, 'hello-sandbox.mjs'));
}, 180_000);

afterAll(async () => {
  await broker?.close();
  if (app !== undefined) rmSync(app, { recursive: true, force: true });
}, 60_000);

function runExample(thread: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS' && !name.startsWith('SBX_')),
  );
  const child = spawn(process.execPath, ['--import', TSX, 'hello-sandbox.mjs', thread], {
    cwd: app,
    env: { ...env, SBX_BROKER_URL: broker!.harness.url, SBX_API_KEY: broker!.apiKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('examples/sdk/hello-sandbox.mjs', () => {
  it('ensures a sandbox, writes and runs a file, reads its output, releases, and exits by itself', async () => {
    const run = await runExample('thr_sdk_example_test');
    expect([run.code, run.stderr]).toEqual([0, '']);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^thread thr_sdk_example_test: sandbox sb_\S+, workspace \/\S+$/);
    const workspace = /workspace (\S+)$/.exec(lines[0] ?? '')?.[1];
    expect(lines.slice(1)).toEqual([
      `wrote ${workspace}/sum.py`,
      'python3 sum.py: exit 0, stdout: sum: 45',
      'out.txt: 45',
      'released',
    ]);
    // Its release was the thread's only binding: the sandbox is gone.
    const sandboxId = /sandbox (sb_[^,]+),/.exec(lines[0] ?? '')?.[1];
    const res = await fetch(`${broker!.harness.url}/admin/sandboxes/${sandboxId}`, {
      headers: { authorization: `Bearer ${broker!.apiKey}` },
    });
    expect(await res.json()).toMatchObject({ state: 'terminated', live_bindings: 0 });
  }, 120_000);
});
