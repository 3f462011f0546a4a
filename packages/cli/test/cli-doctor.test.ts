import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CliStore } from '../src/store.js';
import { deadPort, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
const STEPS = ['login', 'broker', 'auth', 'ensure', 'write', 'read', 'exec', 'shell', 'release'];
let deployment: Deployment;
let cli: SbxRunner;

interface Deployment {
  readonly url: string;
  readonly adminKey: string;
  close(): Promise<void>;
}

/**
 * What `sbx doctor` is for: a fresh install, the broker's own entry point on embedded
 * defaults (PGlite, local agents), started as an operator does. The test harness broker
 * would not do: it mounts the API routes without the app's `/healthz`.
 */
async function startDeployment(): Promise<Deployment> {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const tsx = pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('tsx')).href;
  const dataDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-doctor-')));
  const broker: ChildProcess = spawn(process.execPath, ['--import', tsx, 'services/broker/src/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      PORT: '0',
      BROKER_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  broker.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString('utf8')).slice(-4000)));
  const exited = new Promise((resolve) => broker.once('exit', resolve));
  const close = async (): Promise<void> => {
    broker.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  let url = '';
  let adminKey = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the broker did not start within 90 s:\n${log}`)),
        90_000,
      );
      broker.once('exit', () => reject(new Error(`the broker exited during start-up:\n${log}`)));
      createInterface({ input: broker.stdout! }).on('line', (line) => {
        url = /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? url;
        adminKey = /admin API key.*: (sbk_\S+)/.exec(line)?.[1] ?? adminKey;
        if (url === '' || adminKey === '') return;
        clearTimeout(timer);
        resolve();
      });
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { url, adminKey, close };
}

interface Report {
  ok: boolean;
  thread: string;
  exit_code: number;
  steps: { name: string; status: string; duration_ms: number; detail: string }[];
}

const statuses = (report: Report): string[] => report.steps.map((s) => `${s.name}:${s.status}`);

beforeAll(async () => {
  deployment = await startDeployment();
  cli = sbxRunner();
  const login = await cli.sbx(['login', '--broker', deployment.url, '--actor', 'usr:ops'], {
    input: deployment.adminKey,
  });
  if (login.code !== 0) throw new Error(`login failed: ${login.stderr}`);
}, SLOW);

afterAll(async () => {
  await deployment?.close();
  cli?.close();
}, SLOW);

describe('sbx doctor against a working deployment', () => {
  it(
    'passes every step, reports each with its time in JSON, and leaves no sandbox behind',
    async () => {
      const result = await cli.sbx(['doctor', '--thread', 'thr_doctor', '--json']);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as Report;
      expect(report).toMatchObject({ ok: true, thread: 'thr_doctor', exit_code: 0 });
      expect(statuses(report)).toEqual(STEPS.map((name) => `${name}:ok`));
      for (const step of report.steps) expect(step.duration_ms).toBeGreaterThanOrEqual(0);
      expect(report.steps.find((s) => s.name === 'ensure')?.detail).toMatch(/human: fs:rw shell; agent: /);
      // The doctor's own bindings were the sandbox's only ones: releasing them ended it,
      // and the CLI's thread cache was never touched.
      expect(JSON.parse((await cli.sbx(['sessions', '--json'])).stdout)).toEqual([]);
      expect((await cli.sbx(['exec', 'thr_doctor', '--', 'true'])).code).toBe(4);
    },
    SLOW,
  );

  it(
    'prints one line per step and a verdict for a person, on a fresh throwaway thread',
    async () => {
      const result = await cli.sbx(['doctor']);
      expect(result.code).toBe(0);
      const lines = result.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^sbx doctor: checking with thread doctor-[0-9a-f]{8}$/);
      expect(lines.slice(1, -1).map((line) => line.trim().split(/\s+/).slice(0, 2).join(' '))).toEqual(
        STEPS.map((name) => `ok ${name}`),
      );
      for (const line of lines.slice(1, -1)) expect(line).toMatch(/ \d+ ms {2}\S/);
      expect(lines.at(-1)).toMatch(/^all checks passed: 9 ok, 0 failed, 0 skipped in \d+\.\d s$/);
    },
    SLOW,
  );
});

describe('sbx doctor against a broken deployment', () => {
  it(
    'stops at an unreachable broker with exit 5, skips what depends on it, and says why',
    async () => {
      const other = sbxRunner();
      try {
        const url = `http://127.0.0.1:${await deadPort()}`;
        new CliStore(other.home).writeConfig({ broker_url: url, api_key: 'k', actor_id: 'a' });
        const text = await other.sbx(['doctor']);
        expect(text.code).toBe(5);
        expect(text.stdout).toMatch(
          /^ {2}FAIL {2}broker +\d+ ms {2}cannot reach the broker at .*ECONNREFUSED/m,
        );
        expect(text.stdout).toMatch(/^ {2}skip {2}auth +needs broker$/m);
        expect(text.stdout).toMatch(/^ {2}skip {2}release +no session to release$/m);
        expect(text.stdout).toMatch(/^FAILED: 1 ok, 1 failed, 7 skipped/m);
        expect(text.stderr).toMatch(
          /^sbx: doctor: broker failed: cannot reach the broker at http:\/\/127\.0\.0\.1:\d+\/readyz/,
        );
        expect(text.stderr.trimEnd().split('\n')).toHaveLength(1);

        const json = await other.sbx(['doctor', '--json']);
        expect(json.code).toBe(5);
        const report = JSON.parse(json.stdout) as Report;
        expect(report).toMatchObject({ ok: false, exit_code: 5 });
        expect(statuses(report)).toEqual([
          'login:ok',
          'broker:fail',
          ...STEPS.slice(2).map((name) => `${name}:skip`),
        ]);
      } finally {
        other.close();
      }
    },
    SLOW,
  );

  it(
    'fails at the login step with exit 3 when not logged in, and at auth when the key is rejected',
    async () => {
      const other = sbxRunner();
      try {
        const none = await other.sbx(['doctor', '--json']);
        expect(none.code).toBe(3);
        expect(statuses(JSON.parse(none.stdout) as Report).slice(0, 2)).toEqual([
          'login:fail',
          'broker:skip',
        ]);

        new CliStore(other.home).writeConfig({
          broker_url: deployment.url,
          api_key: 'sbk_bogus',
          actor_id: 'a',
        });
        const rejected = await other.sbx(['doctor', '--json']);
        expect(rejected.code).toBe(3);
        expect(statuses(JSON.parse(rejected.stdout) as Report).slice(0, 4)).toEqual([
          'login:ok',
          'broker:ok',
          'auth:fail',
          'ensure:skip',
        ]);
      } finally {
        other.close();
      }
    },
    SLOW,
  );
});
