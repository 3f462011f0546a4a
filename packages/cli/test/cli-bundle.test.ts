// `sbx` in this checkout runs the CLI's bundle (scripts/build-cli.mjs), built JavaScript in one
// process, not TypeScript through tsx: a module hook (trace-modules.mjs) records every module a
// real `node bin/sbx.mjs` loads. Also: what a command loads is only what it needs, and a source
// file newer than the bundle's stamp is rebuilt before the CLI runs. Speed is bench/cli-start's.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TOOL_NAMES } from '@sbx/mcp';
import { CliStore } from '../src/store.js';
import { SBX_BIN, sbxEnv } from './support.js';

const TRACE = pathToFileURL(fileURLToPath(new URL('./trace-modules.mjs', import.meta.url))).href;
const CLI_DIR = fileURLToPath(new URL('../', import.meta.url));
const BUNDLE_DIR = path.join(CLI_DIR, 'node_modules', '.cache', 'sbx-cli');
const BUNDLE_URL = pathToFileURL(BUNDLE_DIR).href;
const STAMP = path.join(BUNDLE_DIR, 'stamp.json');
const SLOW = 120_000;

let work: string;
let home: string;
let logs = 0;

beforeAll(async () => {
  work = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-bundle-')));
  home = path.join(work, 'home');
  // A login whose broker nobody serves: nothing here reaches a broker.
  new CliStore(home).writeConfig({
    broker_url: 'http://127.0.0.1:9',
    api_key: 'sbk_unused',
    actor_id: 'usr_b',
  });
  // Builds the bundle should it be stale, so the traced runs below load only what runs.
  const first = await traced(['--help']);
  if (first.code !== 0) throw new Error(`sbx --help failed: ${first.stderr}`);
}, SLOW);

afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Traced {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The file: URLs of the modules loaded (node: built-ins left out). */
  readonly files: string[];
}

const newLog = (): string => path.join(work, `modules-${(logs += 1)}.log`);

function filesIn(log: string): string[] {
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return [];
  }
  return [...new Set(text.split('\n').filter((url) => url.startsWith('file:')))];
}

/** `node --import trace-modules.mjs bin/sbx.mjs <args>`, to its end. */
function traced(args: readonly string[]): Promise<Traced> {
  const log = newLog();
  const env = { ...sbxEnv(home), SBX_TEST_MODULE_LOG: log };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TRACE, SBX_BIN, ...args], { env, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, files: filesIn(log) }));
    child.stdin.end();
  });
}

/** What a rebuild loads besides the bundle (the build scripts), should another test's edit trigger one. */
const isBuildScript = (url: string): boolean =>
  /\/scripts\/(build-cli|cli-bundle-plugins|esbuild-kit)\.mjs$/.test(url);

/** The bundle's files a run loaded, relative to the bundle's directory. */
function bundleFiles(files: readonly string[]): string[] {
  return files
    .filter((url) => url.startsWith(`${BUNDLE_URL}/`))
    .map((url) => url.slice(BUNDLE_URL.length + 1))
    .toSorted();
}

function expectOnlyTheBundle(files: readonly string[]): void {
  expect(files.filter((url) => /\.[cm]?ts$/.test(url) || url.includes('/tsx/'))).toEqual([]);
  const others = files.filter(
    (url) => url !== pathToFileURL(SBX_BIN).href && !url.startsWith(`${BUNDLE_URL}/`) && !isBuildScript(url),
  );
  expect(others).toEqual([]);
}

const INITIALIZE_PARAMS = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'sbx-bundle-test', version: '1' },
};

/** The JSON-RPC messages a stdio server writes, one a line, in order. */
function jsonLines(stream: Readable): { next(): Promise<unknown> } {
  const queue: unknown[] = [];
  const waiting: ((message: unknown) => void)[] = [];
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const message: unknown = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      const wake = waiting.shift();
      if (wake === undefined) queue.push(message);
      else wake(message);
    }
  });
  return {
    next: () =>
      queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiting.push(resolve)),
  };
}

describe('the checkout runs the built bundle', () => {
  it('sbx --help loads the bundle entry and the usage text: a few KB, none of the SDK', async () => {
    const run = await traced(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('sbx: shared sandboxes from the terminal');
    expectOnlyTheBundle(run.files);
    const loaded = bundleFiles(run.files);
    expect(loaded).toEqual(expect.arrayContaining(['bin.js', 'usage.js']));
    // Besides those two, at most esbuild's shared helpers (a chunk of ~1 KB); zod alone is ~190 KB.
    const bytes = loaded.reduce((sum, file) => sum + statSync(path.join(BUNDLE_DIR, file)).size, 0);
    expect(bytes).toBeLessThan(16 * 1024);
  });

  it('a command loads its own chunk, not the others (sbx sessions: no MCP server, no sync)', async () => {
    const run = await traced(['sessions']);
    expect([run.code, run.stderr]).toEqual([0, '']);
    expectOnlyTheBundle(run.files);
    const chunks = bundleFiles(run.files).map((file) => file.replace(/-[A-Z0-9]+\.js$/, ''));
    expect(chunks).toContain('chunks/sessions');
    for (const other of ['chunks/mcp', 'chunks/sync', 'chunks/shell', 'chunks/doctor']) {
      expect(chunks).not.toContain(other);
    }
  });

  it(
    'sbx mcp serves MCP over stdio from the bundle, in one process, without the HTTP transport',
    async () => {
      const log = newLog();
      const env = { ...sbxEnv(home), SBX_TEST_MODULE_LOG: log };
      const child = spawn(process.execPath, ['--import', TRACE, SBX_BIN, 'mcp'], { env, stdio: 'pipe' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        const answers = jsonLines(child.stdout);
        const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
        send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: INITIALIZE_PARAMS });
        expect(await answers.next()).toMatchObject({
          id: 1,
          result: { serverInfo: { name: 'sbx-sandbox' } },
        });
        send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
        const listed = (await answers.next()) as { id: number; result: { tools: { name: string }[] } };
        expect(listed.id).toBe(2);
        expect(listed.result.tools.map((tool) => tool.name).toSorted()).toEqual([...TOOL_NAMES].toSorted());
        // The old bin/sbx.mjs ran a second node (through tsx) as its child.
        const pid = String(child.pid);
        expect(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()).toBe('');
      } finally {
        child.stdin.end(); // an MCP server ends when its host closes stdin
        await exited;
      }
      const files = filesIn(log);
      expectOnlyTheBundle(files);
      const chunks = bundleFiles(files).map((file) => file.replace(/-[A-Z0-9]+\.js$/, ''));
      expect(chunks).toContain('chunks/mcp');
      expect(chunks).not.toContain('chunks/http');
    },
    SLOW,
  );
});

describe('the bundle is rebuilt when a file it was built from changed', () => {
  it(
    'a stamp that no longer matches a source file makes the next sbx rebuild, then run',
    async () => {
      const stamp = JSON.parse(readFileSync(STAMP, 'utf8')) as { inputs: Record<string, string> };
      const source = 'packages/cli/src/main.ts';
      const actual = stamp.inputs[source];
      expect(actual).toBeDefined();
      writeFileSync(STAMP, JSON.stringify({ inputs: { ...stamp.inputs, [source]: '0:0' } }));
      const run = await traced(['--help']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('sbx: shared sandboxes from the terminal');
      expect(run.files.some(isBuildScript)).toBe(true);
      const rebuilt = JSON.parse(readFileSync(STAMP, 'utf8')) as { inputs: Record<string, string> };
      expect(rebuilt.inputs[source]).not.toBe('0:0');
    },
    SLOW,
  );
});
