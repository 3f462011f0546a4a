// `sbx` (a real process) with a thread cache that went stale behind its back: the sandbox
// released by another client, a token the broker no longer refreshes, a token the agent
// refuses, a real 403, and an endpoint that stays dead after renegotiating.
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BrokerClient, NotFoundError, SessionExpiredError } from '@sbx/client';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { liftOwnerShare } from '../../../services/broker/test/support/owner-share.js';
import { CliStore, type CachedBinding, type CachedThread } from '../src/store.js';
import { sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
let real: RealBroker;
let cli: SbxRunner;
/** Another client of the same owner (the web app, a colleague's script). */
let elsewhere: BrokerClient;
const threads = [
  'thr_released',
  'thr_shell',
  'thr_expired',
  'thr_rebind',
  'thr_tampered',
  'thr_forbidden',
  'thr_dead',
  'thr_sync_gone',
  'thr_sync_moved',
];

const oneLine = (text: string): boolean => text.trimEnd().split('\n').length === 1;

function cached(thread: string): CachedThread {
  const entry = new CliStore(cli.home).readThreads()[thread];
  if (entry === undefined) throw new Error(`${thread} is not cached`);
  return entry;
}

function binding(entry: CachedThread, role: 'human' | 'agent'): CachedBinding {
  const found = entry.bindings[role];
  if (found === undefined) throw new Error(`no ${role} binding cached on ${entry.sandbox_id}`);
  return found;
}

/** Rewrites one cached binding, as a stale or hand-edited cache would hold it. */
function cacheBinding(thread: string, role: 'human' | 'agent', change: Partial<CachedBinding>): void {
  new CliStore(cli.home).updateThread(thread, (entry) =>
    entry === undefined
      ? undefined
      : { ...entry, bindings: { ...entry.bindings, [role]: { ...binding(entry, role), ...change } } },
  );
}

async function ensured(thread: string): Promise<CachedThread> {
  const result = await cli.sbx(['ensure', thread]);
  if (result.code !== 0) throw new Error(`sbx ensure ${thread} failed: ${result.stderr}`);
  return cached(thread);
}

/** Ends the sandbox from outside the CLI: every binding released, the last one destroys it. */
async function releaseBehindItsBack(entry: CachedThread): Promise<void> {
  for (const held of Object.values(entry.bindings)) await elsewhere.release(held.session_id);
  await expect(elsewhere.inspect(binding(entry, 'human').session_id)).rejects.toBeInstanceOf(
    SessionExpiredError,
  );
}

/** The thread has no sandbox: attaching (which never creates) finds none. */
async function expectNoSandbox(thread: string): Promise<void> {
  const target = {
    scope: { type: 'thread', id: thread },
    actor: { type: 'human', id: 'usr:stale' },
  } as const;
  await expect(elsewhere.get(target)).rejects.toBeInstanceOf(NotFoundError);
}

beforeAll(async () => {
  real = await startRealBroker();
  // One login ensures a thread per test here: more than the default per-owner share of five.
  await liftOwnerShare(real.harness.repositories, real.harness.tenantId);
  cli = sbxRunner();
  elsewhere = new BrokerClient({ baseUrl: real.harness.url, apiKey: real.apiKey });
  const login = await cli.sbx(['login', '--broker', real.harness.url, '--actor', 'usr:stale'], {
    input: real.apiKey,
  });
  if (login.code !== 0) throw new Error(`sbx login failed: ${login.stderr}`);
}, SLOW);

afterAll(async () => {
  for (const thread of threads) await cli.sbx(['release', thread]);
  await real.close();
  cli.close();
}, SLOW);

describe('a stale thread cache is renegotiated once, never by creating a sandbox', () => {
  it(
    'a sandbox released behind its back: exec exits 4 and creates none; sbx ensure starts a new one',
    async () => {
      const before = await ensured('thr_released');
      const wrote = await cli.sbx(['exec', 'thr_released', '--', 'sh', '-c', 'echo old > note.txt']);
      expect(wrote.code).toBe(0);
      await releaseBehindItsBack(before);

      const result = await cli.sbx(['exec', 'thr_released', '--', 'sh', '-c', 'cat note.txt || echo new']);
      expect(result).toEqual({
        code: 4,
        stdout: '',
        stderr: "sbx: the thread's sandbox is gone: run sbx ensure thr_released\n",
      });
      await expectNoSandbox('thr_released');
      // The bindings of the ended sandbox are dropped, not kept for the next command.
      expect(new CliStore(cli.home).readThreads()['thr_released']).toBeUndefined();

      const after = await ensured('thr_released');
      expect(after.sandbox_id).not.toBe(before.sandbox_id);
      const fresh = await cli.sbx(['exec', 'thr_released', '--', 'sh', '-c', 'cat note.txt || echo new']);
      expect(fresh).toMatchObject({ code: 0, stdout: 'new\n' });
    },
    SLOW,
  );

  it(
    'a shell opened on a released sandbox exits 4 and starts no sandbox',
    async () => {
      const before = await ensured('thr_shell');
      await releaseBehindItsBack(before);

      const result = await cli.sbx(['shell', 'thr_shell'], { input: 'echo "up-$((40+2))"\nexit 3\n' });
      expect(result.code).toBe(4);
      expect(result.stderr).toBe("sbx: the thread's sandbox is gone: run sbx ensure thr_shell\n");
      await expectNoSandbox('thr_shell');
    },
    SLOW,
  );

  it(
    'a token the broker will not refresh (410) because the sandbox ended: exit 4, none created',
    async () => {
      const before = await ensured('thr_expired');
      await releaseBehindItsBack(before);
      // Due for refresh: the CLI asks the broker first, and learns the binding ended.
      cacheBinding('thr_expired', 'human', { expires_at: new Date(Date.now() - 1000).toISOString() });

      const listed = await cli.sbx(['ls', 'thr_expired', '--json']);
      expect(listed.code).toBe(4);
      expect(listed.stderr).toMatch(/^sbx: the thread's sandbox is gone: run sbx ensure thr_expired\n$/);
      await expectNoSandbox('thr_expired');
    },
    SLOW,
  );

  it(
    'a binding released elsewhere on a sandbox that lives on (410): a new binding on the same sandbox',
    async () => {
      const before = await ensured('thr_rebind');
      // Only the human binding ends; the agent's keeps the sandbox.
      await elsewhere.release(binding(before, 'human').session_id);
      cacheBinding('thr_rebind', 'human', { expires_at: new Date(Date.now() - 1000).toISOString() });

      const listed = await cli.sbx(['ls', 'thr_rebind', '--json']);
      expect(listed.code).toBe(0);
      const after = cached('thr_rebind');
      expect(after.sandbox_id).toBe(before.sandbox_id);
      expect(binding(after, 'human').session_id).not.toBe(binding(before, 'human').session_id);
    },
    SLOW,
  );

  it(
    'a tampered token (401 from the agent): cat renegotiates on the same sandbox and prints the file',
    async () => {
      const before = await ensured('thr_tampered');
      const wrote = await cli.sbx(['exec', 'thr_tampered', '--', 'sh', '-c', 'echo hello > greeting.txt']);
      expect(wrote.code).toBe(0);
      const [header, payload, signature = ''] = binding(before, 'human').token.split('.');
      const forged = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
      cacheBinding('thr_tampered', 'human', { token: forged });

      expect(await cli.sbx(['cat', 'thr_tampered:greeting.txt'])).toEqual({
        code: 0,
        stdout: 'hello\n',
        stderr: '',
      });
      const after = cached('thr_tampered');
      expect(after.sandbox_id).toBe(before.sandbox_id);
      expect(binding(after, 'human').token).not.toBe(forged);
      // Only the refused binding was renegotiated.
      expect(after.bindings.agent).toEqual(before.bindings.agent);
    },
    SLOW,
  );

  it(
    'a real 403 (a valid token without the capability) is not retried: exit 3',
    async () => {
      const before = await ensured('thr_forbidden');
      const agent = binding(before, 'agent');
      const readOnly = real.mintShortToken(before.sandbox_id, agent.session_id, ['fs:ro'], 600);
      cacheBinding('thr_forbidden', 'agent', { token: readOnly.token });

      const result = await cli.sbx(['exec', 'thr_forbidden', '--', 'true']);
      expect(result.code).toBe(3);
      expect(oneLine(result.stderr)).toBe(true);
      // Nothing was renegotiated: the cache still holds the refused token.
      expect(binding(cached('thr_forbidden'), 'agent').token).toBe(readOnly.token);
    },
    SLOW,
  );

  it(
    'an endpoint still dead after renegotiating is reported (exit 5) after one renegotiation',
    async () => {
      const before = await ensured('thr_dead');
      // The agent stops but the broker's record still says active (as after a crash it
      // did not notice): ensure hands out the same dead endpoint again.
      await real.harness.provider.stop(before.sandbox_id);
      const negotiations = async (): Promise<number> =>
        (await real.harness.repositories.audit.listBySandbox(before.sandbox_id, { limit: 1000 })).filter(
          (event) => event.action === 'session.negotiate',
        ).length;
      const negotiatedBefore = await negotiations();

      const result = await cli.sbx(['exec', 'thr_dead', '--', 'true']);
      expect(result.code).toBe(5);
      expect(oneLine(result.stderr)).toBe(true);
      expect(await negotiations()).toBe(negotiatedBefore + 1);
    },
    SLOW,
  );
});

describe('sbx sync --delete on a stale cache deletes nothing', () => {
  /** A pulled copy of the thread's workspace plus a file that exists only here. */
  async function pulledCopy(thread: string): Promise<{ dir: string; files: string[] }> {
    const wrote = await cli.sbx([
      'exec',
      thread,
      '--',
      'sh',
      '-c',
      'mkdir -p src && echo remote > src/r.txt',
    ]);
    expect(wrote.code).toBe(0);
    const dir = path.join(path.dirname(cli.home), `copy-${thread}`);
    expect((await cli.sbx(['sync', `${thread}:`, dir])).code).toBe(0);
    writeFileSync(path.join(dir, 'precious.txt'), 'only here\n');
    return { dir, files: readdirSync(dir, { recursive: true }).map(String).toSorted() };
  }

  it(
    'the sandbox was released: exit 4, the local directory untouched, no sandbox created',
    async () => {
      const before = await ensured('thr_sync_gone');
      const copy = await pulledCopy('thr_sync_gone');
      expect(copy.files).toEqual(['precious.txt', 'src', path.join('src', 'r.txt')]);
      await releaseBehindItsBack(before);

      const result = await cli.sbx(['sync', 'thr_sync_gone:', copy.dir, '--delete']);
      expect(result.code).toBe(4);
      expect(result.stderr).toBe("sbx: the thread's sandbox is gone: run sbx ensure thr_sync_gone\n");
      expect(readdirSync(copy.dir, { recursive: true }).map(String).toSorted()).toEqual(copy.files);
      await expectNoSandbox('thr_sync_gone');
    },
    SLOW,
  );

  it(
    'the thread moved to another, empty sandbox meanwhile: --delete is refused (exit 1)',
    async () => {
      const before = await ensured('thr_sync_moved');
      const copy = await pulledCopy('thr_sync_moved');
      await releaseBehindItsBack(before);
      // Someone else started the thread again: a new, empty workspace.
      const target = {
        scope: { type: 'thread', id: 'thr_sync_moved' },
        actor: { type: 'human', id: 'usr:stale' },
      } as const;
      const moved = await elsewhere.ensure(target);
      expect(moved.sandbox.id).not.toBe(before.sandbox_id);

      const result = await cli.sbx(['sync', 'thr_sync_moved:', copy.dir, '--delete']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `^sbx: sync: the thread's sandbox changed during the sync \\(${before.sandbox_id} → ${moved.sandbox.id}\\); --delete refused, nothing was deleted`,
        ),
      );
      expect(readdirSync(copy.dir, { recursive: true }).map(String).toSorted()).toEqual(copy.files);
    },
    SLOW,
  );
});
