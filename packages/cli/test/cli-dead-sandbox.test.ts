// `sbx` (a real process) against a thread whose sandbox is terminated (issue 27): an open
// shell says so and by whom (exit 4), instead of `Hangup` and 129; `sbx release` has nothing
// to release (exit 0); `sbx sessions` drops the dead bindings.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CliStore, type CachedThread } from '../src/store.js';
import { SBX_BIN, sbxEnv, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
let real: RealBroker;
let cli: SbxRunner;
let adminKey: string;

function cached(thread: string): CachedThread {
  const entry = new CliStore(cli.home).readThreads()[thread];
  if (entry === undefined) throw new Error(`${thread} is not cached`);
  return entry;
}

async function ensured(thread: string): Promise<CachedThread> {
  const result = await cli.sbx(['ensure', thread]);
  if (result.code !== 0) throw new Error(`sbx ensure ${thread} failed: ${result.stderr}`);
  return cached(thread);
}

/** An operator ends the sandbox (POST /admin/sandboxes/{id}/terminate), as `ops_terminator`. */
async function terminate(sandboxId: string): Promise<void> {
  const res = await request(real.harness.url)
    .post(`/admin/sandboxes/${sandboxId}/terminate`)
    .set('Authorization', `Bearer ${adminKey}`)
    .send({ reason: 'test' });
  if (res.status !== 200) throw new Error(`terminate answered ${res.status}: ${JSON.stringify(res.body)}`);
}

beforeAll(async () => {
  real = await startRealBroker();
  adminKey = await real.harness.apiKey({ scopes: ['admin:sandbox'], principalId: 'ops_terminator' });
  cli = sbxRunner();
  const login = await cli.sbx(['login', '--broker', real.harness.url, '--actor', 'usr:dead'], {
    input: real.apiKey,
  });
  if (login.code !== 0) throw new Error(`sbx login failed: ${login.stderr}`);
}, SLOW);

afterAll(async () => {
  await real.close();
  cli.close();
}, SLOW);

describe('a thread whose sandbox was terminated', () => {
  it(
    'an open shell says the sandbox was terminated and by whom, and exits 4',
    async () => {
      const entry = await ensured('thr_dead_shell');
      const child = spawn(process.execPath, [SBX_BIN, 'shell', 'thr_dead_shell'], {
        env: sbxEnv(cli.home),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.stdin.write('echo "up-$((6*7))"\n');
      const deadline = Date.now() + 30_000;
      while (!stdout.includes('up-42') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(stdout).toContain('up-42');

      await terminate(entry.sandbox_id);
      expect(await exited).toBe(4);
      expect(stderr).toMatch(
        /sbx: the sandbox of thread thr_dead_shell was terminated by ops_terminator \(admin_terminate\): sbx ensure thr_dead_shell starts a new one\n$/,
      );
      expect(stderr).not.toMatch(/\n\s+at /);
      // Its bindings are of no use any more: forgotten.
      expect(new CliStore(cli.home).readThreads()['thr_dead_shell']).toBeUndefined();
    },
    SLOW,
  );

  it(
    'release has nothing to release (exit 0), cached or not',
    async () => {
      const entry = await ensured('thr_dead_release');
      await terminate(entry.sandbox_id);
      const nothing = {
        code: 0,
        stdout: 'nothing to release: thread thr_dead_release has no sandbox\n',
        stderr: '',
      };
      // Cached: its bindings ended with the sandbox.
      expect(await cli.sbx(['release', 'thr_dead_release'])).toEqual(nothing);
      expect(new CliStore(cli.home).readThreads()['thr_dead_release']).toBeUndefined();
      // Not cached (as after any command that found the sandbox gone): no sandbox to join.
      expect(await cli.sbx(['release', 'thr_dead_release'])).toEqual(nothing);
      const json = await cli.sbx(['release', 'thr_dead_release', '--json']);
      expect(JSON.parse(json.stdout)).toEqual({ thread: 'thr_dead_release', released_sessions: [] });
    },
    SLOW,
  );

  it(
    'sessions drops the bindings of an ended sandbox and says so; live ones stay',
    async () => {
      const live = await ensured('thr_alive');
      const dead = await ensured('thr_dead_listed');
      await terminate(dead.sandbox_id);
      const listed = await cli.sbx(['sessions', '--json']);
      expect(listed.code).toBe(0);
      const threads = (JSON.parse(listed.stdout) as { thread: string; sandbox_id: string }[]).map((t) => [
        t.thread,
        t.sandbox_id,
      ]);
      expect(threads).toEqual([['thr_alive', live.sandbox_id]]);
      expect(listed.stderr).toBe(
        'sbx: dropped thread thr_dead_listed: its sandbox ended (sbx ensure thr_dead_listed starts a new one)\n',
      );
      expect(new CliStore(cli.home).readThreads()['thr_dead_listed']).toBeUndefined();
      expect((await cli.sbx(['release', 'thr_alive'])).code).toBe(0);
    },
    SLOW,
  );
});
