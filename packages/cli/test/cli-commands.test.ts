import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CliStore } from '../src/store.js';
import { SBX_BIN, deadPort, sbxEnv, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let real: RealBroker;
let cli: SbxRunner;

const modeOf = (file: string): number => statSync(file).mode & 0o777;
/** Where the thread's sandbox keeps its workspace for its processes, as `sbx ensure` cached it. */
function workspaceOf(thread: string): string {
  const workspace = new CliStore(cli.home).readThreads()[thread]?.workspace_path;
  if (workspace === undefined) throw new Error(`no workspace path cached for ${thread}`);
  return workspace;
}
const oneLine = (text: string): boolean => text.trimEnd().split('\n').length === 1;

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
}, SLOW);

afterAll(async () => {
  await cli.sbx(['release', 'thr_cli']);
  await real.close();
  cli.close();
}, SLOW);

describe('sbx login, whoami, logout', () => {
  it('refuses commands before login with exit 3 and says how to log in', async () => {
    const result = await cli.sbx(['whoami']);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/not logged in: run sbx login/);
    expect(oneLine(result.stderr)).toBe(true);
  });

  it('rejects a bad key with exit 3 and saves nothing', async () => {
    const result = await cli.sbx(['login', '--broker', real.harness.url, '--api-key', 'sbk_not-a-key']);
    expect(result.code).toBe(3);
    expect(oneLine(result.stderr)).toBe(true);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(new CliStore(cli.home).readConfig()).toBeUndefined();
  });

  it(
    'logs in with the key on stdin and stores it 0600 in a 0700 directory',
    async () => {
      const result = await cli.sbx(['login', '--broker', real.harness.url, '--actor', 'usr:tester'], {
        input: `${real.apiKey}\n`,
      });
      expect(result.code).toBe(0);
      expect(result.stdout).not.toContain(real.apiKey);
      const store = new CliStore(cli.home);
      expect(store.readConfig()).toEqual({
        broker_url: real.harness.url,
        api_key: real.apiKey,
        actor_id: 'usr:tester',
      });
      expect(modeOf(store.configPath)).toBe(0o600);
      expect(modeOf(cli.home)).toBe(0o700);
    },
    SLOW,
  );

  it(
    'whoami proves the key against the broker, in text and JSON',
    async () => {
      const text = (await cli.sbx(['whoami'])).stdout; // the key's principal, as the broker reports it
      expect(text).toMatch(/^authenticated to \S+ as principal_\S+ \(service, .*as usr:tester\n$/);
      const json = await cli.sbx(['whoami', '--json']);
      expect(JSON.parse(json.stdout)).toEqual({
        broker_url: real.harness.url,
        principal: expect.objectContaining({ principal_type: 'service', tenant_id: real.harness.tenantId }),
        actor_id: 'usr:tester',
        authenticated: true,
      });
    },
    SLOW,
  );

  it(
    'a broker that is down is exit 5 with one line',
    async () => {
      const other = sbxRunner();
      try {
        const login = await other.sbx([
          'login',
          '--broker',
          `http://127.0.0.1:${await deadPort()}`,
          '--api-key',
          'k',
        ]);
        expect(login.code).toBe(5);
        expect(oneLine(login.stderr)).toBe(true);
        expect(login.stderr).toMatch(/could not reach the server.*is the broker running/);
        new CliStore(other.home).writeConfig({
          broker_url: `http://127.0.0.1:${await deadPort()}`,
          api_key: 'k',
          actor_id: 'a',
        });
        const ensure = await other.sbx(['ensure', 'thr_x']);
        expect(ensure.code).toBe(5);
        expect(oneLine(ensure.stderr)).toBe(true);
      } finally {
        other.close();
      }
    },
    SLOW,
  );

  it(
    'logout forgets the key',
    async () => {
      const other = sbxRunner();
      try {
        await other.sbx(['login', '--broker', real.harness.url], { input: real.apiKey });
        expect((await other.sbx(['logout'])).code).toBe(0);
        expect(new CliStore(other.home).readConfig()).toBeUndefined();
        expect((await other.sbx(['whoami'])).code).toBe(3);
      } finally {
        other.close();
      }
    },
    SLOW,
  );
});

describe('sbx on a thread', () => {
  it(
    'says to ensure first when the thread has no sandbox (exit 4)',
    async () => {
      const result = await cli.sbx(['exec', 'thr_none', '--', 'true']);
      expect(result.code).toBe(4);
      expect(result.stderr).toMatch(/no sandbox for thread thr_none: run sbx ensure thr_none first/);
    },
    SLOW,
  );

  it(
    'ensure caches the thread 0600 and sessions lists it without tokens',
    async () => {
      const ensured = await cli.sbx(['ensure', 'thr_cli', '--json']);
      expect(ensured.code).toBe(0);
      const summary = JSON.parse(ensured.stdout) as { sandbox_id: string; bindings: { role: string }[] };
      expect(summary.sandbox_id).toMatch(/^sb_/);
      expect(summary.bindings.map((b) => b.role)).toEqual(['human', 'agent']);
      // Where the sandbox's processes see the workspace: /workspace under bubblewrap.
      expect(summary).toHaveProperty('workspace_path', workspaceOf('thr_cli'));
      expect(workspaceOf('thr_cli')).toMatch(
        real.harness.provider.isolation === 'bubblewrap' ? /^\/workspace$/ : /^\/(?!workspace$)./,
      );
      const store = new CliStore(cli.home);
      expect(modeOf(store.threadsPath)).toBe(0o600);
      expect(store.readThreads()['thr_cli']?.sandbox_id).toBe(summary.sandbox_id);
      const listed = await cli.sbx(['sessions', '--json']);
      expect(JSON.parse(listed.stdout)).toEqual([summary]);
      const token = store.readThreads()['thr_cli']?.bindings.human?.token ?? 'missing';
      expect(listed.stdout).not.toContain(token);
      const table = await cli.sbx(['sessions']);
      expect(table.stdout).toMatch(/^THREAD\s+SANDBOX\s+ROLE/);
      expect(table.stdout).toContain(summary.sandbox_id);
    },
    SLOW,
  );

  it(
    'exec passes output through and propagates the exit code',
    async () => {
      expect((await cli.sbx(['exec', 'thr_cli', '--', 'sh', '-c', 'exit 3'])).code).toBe(3);
      const result = await cli.sbx(['exec', 'thr_cli', '--', 'sh', '-c', 'echo out; echo err >&2']);
      expect(result).toEqual({ code: 0, stdout: 'out\n', stderr: 'err\n' });
      const json = await cli.sbx(['exec', 'thr_cli', '--json', '--', 'sh', '-c', 'echo hi; exit 2']);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stdout)).toMatchObject({ exit_code: 2, stdout: 'hi\n' });
    },
    SLOW,
  );

  it(
    'exec -i passes stdin through; without -i the command sees EOF at once',
    async () => {
      const upper = await cli.sbx(['exec', 'thr_cli', '-i', '--', 'tr', 'a-z', 'A-Z'], { input: 'hello\n' });
      expect(upper).toEqual({ code: 0, stdout: 'HELLO\n', stderr: '' });
      const closed = await cli.sbx(['exec', 'thr_cli', '--', 'cat'], { input: 'ignored' });
      expect(closed).toEqual({ code: 0, stdout: '', stderr: '' });
    },
    SLOW,
  );

  it(
    'exec streams output as it is written, and Ctrl-C (SIGINT) reaches the command',
    async () => {
      const child = spawn(
        process.execPath,
        [SBX_BIN, 'exec', 'thr_cli', '--', 'sh', '-c', 'echo first; sleep 30; echo never'],
        // Its own process group, so SIGINT can go to the group as a terminal's Ctrl-C does.
        { env: sbxEnv(cli.home), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const deadline = Date.now() + 30_000;
      while (!stdout.includes('first') && Date.now() < deadline) await sleep(50);
      expect(stdout).toBe('first\n'); // printed while the command is still running
      process.kill(-child.pid!, 'SIGINT');
      expect(await exited).toBe(130);
      expect(stdout).not.toContain('never');
    },
    SLOW,
  );

  it(
    'cp copies both ways byte for byte; cat, ls and rm see the files',
    async () => {
      const local = path.dirname(cli.home);
      const bytes = randomBytes(3 * 1024 * 1024 + 17);
      writeFileSync(path.join(local, 'blob.bin'), bytes);
      writeFileSync(path.join(local, 'note.txt'), 'hello from the laptop\n');
      const ws = workspaceOf('thr_cli');
      const up = await cli.sbx(['cp', path.join(local, 'blob.bin'), 'thr_cli:data/blob.bin', '--json']);
      expect(up.code).toBe(0);
      // Given relative, reported as the sandbox names it.
      expect(JSON.parse(up.stdout)).toMatchObject({ to: `thr_cli:${ws}/data/blob.bin`, bytes: bytes.length });
      expect((await cli.sbx(['cp', path.join(local, 'note.txt'), 'thr_cli:data/'])).code).toBe(0);
      expect(await cli.sbx(['cat', 'thr_cli:data/note.txt'])).toEqual({
        code: 0,
        stdout: 'hello from the laptop\n',
        stderr: '',
      });
      const back = await cli.sbx([
        'cp',
        `thr_cli:${ws}/data/blob.bin`,
        path.join(local, 'back.bin'),
        '--json',
      ]);
      expect(JSON.parse(back.stdout)).toMatchObject({ bytes: bytes.length });
      expect(readFileSync(path.join(local, 'back.bin')).equals(bytes)).toBe(true);
      // The agent binding sees the human's files: one sandbox.
      expect((await cli.sbx(['exec', 'thr_cli', '--', 'wc', '-c', 'data/blob.bin'])).stdout).toContain(
        String(bytes.length),
      );
      const listing = await cli.sbx(['ls', 'thr_cli:data', '--json']);
      const listed = JSON.parse(listing.stdout) as {
        path: string;
        entries: { name: string; size: number }[];
      };
      expect(listed.path).toBe(`${ws}/data`);
      expect(listed.entries.map((e) => [e.name, e.size])).toEqual([
        ['blob.bin', bytes.length],
        ['note.txt', 22],
      ]);
      expect((await cli.sbx(['ls', 'thr_cli:data'])).stdout).toMatch(/NAME\n.*blob\.bin\n.*note\.txt\n$/s);
      // `thr_cli:` and a bare `thr_cli` are the workspace itself.
      for (const workspace of ['thr_cli:', 'thr_cli', `thr_cli:${ws}`]) {
        const root = JSON.parse((await cli.sbx(['ls', workspace, '--json'])).stdout) as {
          path: string;
          entries: { name: string }[];
        };
        expect(root.path).toBe(ws);
        expect(root.entries.map((e) => e.name)).toContain('data');
      }
      expect((await cli.sbx(['rm', 'thr_cli:data/note.txt'])).code).toBe(0);
      const gone = await cli.sbx(['cat', 'thr_cli:data/note.txt']);
      expect(gone.code).toBe(4);
      expect(oneLine(gone.stderr)).toBe(true);
    },
    SLOW,
  );

  it(
    'usage errors are exit 2',
    async () => {
      expect((await cli.sbx(['frobnicate'])).code).toBe(2);
      expect((await cli.sbx(['exec', 'thr_cli', 'true'])).code).toBe(2);
      expect((await cli.sbx(['cp', 'a', 'b'])).code).toBe(2);
      expect((await cli.sbx(['ensure', '--bogus', 't'])).code).toBe(2);
    },
    SLOW,
  );

  it(
    'release ends the sandbox and forgets the thread',
    async () => {
      const released = await cli.sbx(['release', 'thr_cli', '--json']);
      expect(released.code).toBe(0);
      expect((JSON.parse(released.stdout) as { released_sessions: string[] }).released_sessions).toHaveLength(
        2,
      );
      expect(JSON.parse((await cli.sbx(['sessions', '--json'])).stdout)).toEqual([]);
      expect((await cli.sbx(['exec', 'thr_cli', '--', 'true'])).code).toBe(4);
    },
    SLOW,
  );
});
