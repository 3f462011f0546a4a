import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CliStore } from '../src/store.js';
import { logInAndEnsure, sbxRunner, type SbxRunner } from './support.js';
import { startWatch } from './watch-process.js';

const SLOW = 120_000;
const THREAD = 'thr_sync';
let real: RealBroker;
let cli: SbxRunner;
let work: string;
/** Where the sandbox's processes see the workspace (`/workspace` under bubblewrap). */
let workspace: string;

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Summary {
  direction: string;
  uploaded: number;
  downloaded: number;
  directories_created: number;
  deleted: number;
  skipped: number;
  conflicts: number;
  bytes: number;
  changes: { action: string; path: string; bytes?: number }[];
}

/** `sbx sync … --json`, which must succeed; its summary. */
async function syncJson(...args: string[]): Promise<Summary> {
  const result = await cli.sbx(['sync', ...args, '--json']);
  if (result.code !== 0)
    throw new Error(`sbx sync ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as Summary;
}

const pathsOf = (s: Summary, action: string): string[] =>
  s.changes
    .filter((c) => c.action === action)
    .map((c) => c.path)
    .toSorted();

async function remoteText(remotePath: string): Promise<string> {
  const result = await cli.sbx(['cat', `${THREAD}:${remotePath}`]);
  if (result.code !== 0) throw new Error(`cat ${remotePath}: ${result.stderr}`);
  return result.stdout;
}

async function remoteNames(remotePath: string): Promise<string[]> {
  const result = await cli.sbx(['ls', `${THREAD}:${remotePath}`, '--json']);
  if (result.code !== 0) throw new Error(`ls ${remotePath}: ${result.stderr}`);
  return (JSON.parse(result.stdout) as { entries: { name: string }[] }).entries.map((e) => e.name).toSorted();
}

const local = (...parts: string[]): string => path.join(work, ...parts);

/** As editors save: written beside, renamed in (a watcher never sees half a file). */
function writeAtomically(file: string, text: string): void {
  const temp = local(`.tmp-${path.basename(file)}`);
  writeFileSync(temp, text);
  renameSync(temp, file);
}

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  work = path.dirname(cli.home);
  await logInAndEnsure(cli, real.harness.url, real.apiKey, [THREAD]);
  workspace = new CliStore(cli.home).readThreads()[THREAD]?.workspace_path ?? 'not cached';
  mkdirSync(local('src', 'dir', 'deep'), { recursive: true });
  mkdirSync(local('src', 'empty'));
  writeFileSync(local('src', 'a.txt'), 'alpha\n');
  writeFileSync(local('src', 'dir', 'b.bin'), randomBytes(100 * 1024 + 3));
  writeFileSync(local('src', 'dir', 'deep', 'c.txt'), 'gamma\n');
}, SLOW);

afterAll(async () => {
  await cli.sbx(['release', THREAD]);
  await real.close();
  cli.close();
}, SLOW);

describe('sbx sync: push', () => {
  it(
    'creates the directories and files, then skips what did not change',
    async () => {
      const first = await syncJson(local('src'), `${THREAD}:proj`);
      expect(first).toMatchObject({ direction: 'push', uploaded: 3, directories_created: 3, skipped: 0 });
      expect(pathsOf(first, 'upload')).toEqual(['a.txt', 'dir/b.bin', 'dir/deep/c.txt']);
      expect(pathsOf(first, 'mkdir')).toEqual(['dir/', 'dir/deep/', 'empty/']);
      expect(first.bytes).toBe(6 + 100 * 1024 + 3 + 6);
      expect(await remoteText('proj/dir/deep/c.txt')).toBe('gamma\n');
      expect(await remoteNames('proj')).toEqual(['a.txt', 'dir', 'empty']);

      // The same directory named absolutely is the same sync (one manifest): nothing to do.
      const again = await syncJson(local('src'), `${THREAD}:${workspace}/proj/`);
      expect(again).toMatchObject({ uploaded: 0, directories_created: 0, deleted: 0, skipped: 3, bytes: 0 });
    },
    SLOW,
  );

  it(
    'uploads a file changed here or in the sandbox, one line per change, and nothing else',
    async () => {
      appendFileSync(local('src', 'a.txt'), 'more\n');
      const text = await cli.sbx(['sync', local('src'), `${THREAD}:proj`]);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/^uploaded +a\.txt \(11 B\)\n/);
      // The report names the sandbox directory as its processes see it.
      expect(text.stdout).toContain(` → thr_sync:${workspace}/proj: 1 uploaded, 2 unchanged, 11 B\n`);
      expect(await remoteText('proj/a.txt')).toBe('alpha\nmore\n');

      // Someone replaces the file in the sandbox: the next push puts the local version back.
      writeFileSync(local('other.txt'), 'written in the sandbox\n');
      expect((await cli.sbx(['cp', local('other.txt'), `${THREAD}:proj/dir/deep/c.txt`])).code).toBe(0);
      const restored = await syncJson(local('src'), `${THREAD}:proj`);
      expect(pathsOf(restored, 'upload')).toEqual(['dir/deep/c.txt']);
      expect(await remoteText('proj/dir/deep/c.txt')).toBe('gamma\n');
    },
    SLOW,
  );

  it(
    'keeps sandbox files that are gone here unless --delete is given',
    async () => {
      writeFileSync(local('extra.txt'), 'only in the sandbox\n');
      expect((await cli.sbx(['cp', local('extra.txt'), `${THREAD}:proj/extra.txt`])).code).toBe(0);
      writeFileSync(local('src', 'gone.txt'), 'soon gone\n');
      expect((await syncJson(local('src'), `${THREAD}:proj`)).uploaded).toBe(1);
      rmSync(local('src', 'gone.txt'));
      rmSync(local('src', 'dir', 'deep'), { recursive: true });

      const kept = await syncJson(local('src'), `${THREAD}:proj`);
      expect(kept).toMatchObject({ deleted: 0, uploaded: 0 });
      expect(await remoteNames('proj')).toEqual(['a.txt', 'dir', 'empty', 'extra.txt', 'gone.txt']);

      const mirrored = await syncJson(local('src'), `${THREAD}:proj`, '--delete');
      expect(pathsOf(mirrored, 'delete')).toEqual(['dir/deep/', 'extra.txt', 'gone.txt']);
      expect(await remoteNames('proj')).toEqual(['a.txt', 'dir', 'empty']);
      expect(await remoteNames('proj/dir')).toEqual(['b.bin']);
    },
    SLOW,
  );
});

describe('sbx sync: the workspace itself', () => {
  it(
    'a bare thread or `thread:` is the workspace; an older cache learns its path from the agent',
    async () => {
      expect(workspace).toMatch(
        real.harness.provider.isolation === 'bubblewrap' ? /^\/workspace$/ : /^\/(?!workspace$)./,
      );
      mkdirSync(local('top'));
      writeFileSync(local('top', 'top.txt'), 'at the top\n');
      const pushed = await syncJson(local('top'), THREAD);
      expect(pushed).toMatchObject({ uploaded: 1 });
      // In the workspace, where commands run: the default cwd.
      const cat = await cli.sbx(['exec', THREAD, '--', 'cat', 'top.txt']);
      expect(cat).toEqual({ code: 0, stdout: 'at the top\n', stderr: '' });
      expect(await syncJson(local('top'), `${THREAD}:`)).toMatchObject({ uploaded: 0, skipped: 1 });
      expect(await syncJson(local('top'), `${THREAD}:${workspace}`)).toMatchObject({
        uploaded: 0,
        skipped: 1,
      });

      // A cache written before the broker sent the workspace path: asked of the agent, then kept.
      const store = new CliStore(cli.home);
      store.updateThread(THREAD, (entry) => {
        if (entry === undefined) return undefined;
        const { workspace_path: _dropped, ...older } = entry;
        return older;
      });
      expect(store.readThreads()[THREAD]).not.toHaveProperty('workspace_path');
      const text = await cli.sbx(['sync', local('top'), `${THREAD}:.`]);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain(` → ${THREAD}:${workspace}: 0 uploaded, 1 unchanged`);
      expect(store.readThreads()[THREAD]?.workspace_path).toBe(workspace);
      expect((await cli.sbx(['rm', `${THREAD}:top.txt`])).code).toBe(0);
    },
    SLOW,
  );
});

describe('sbx sync: pull', () => {
  it(
    'mirrors the sandbox directory here, with its mtimes, and skips unchanged files next time',
    async () => {
      const first = await syncJson(`${THREAD}:proj`, local('out'));
      expect(first).toMatchObject({ direction: 'pull', downloaded: 2, directories_created: 2 });
      expect(
        readFileSync(local('out', 'dir', 'b.bin')).equals(readFileSync(local('src', 'dir', 'b.bin'))),
      ).toBe(true);
      expect(statSync(local('out', 'empty')).isDirectory()).toBe(true);
      const listed = await cli.sbx(['ls', `${THREAD}:proj`, '--json']);
      const entries = (JSON.parse(listed.stdout) as { entries: { name: string; mtime: string }[] }).entries;
      const remoteMtime = entries.find((e) => e.name === 'a.txt')?.mtime ?? '';
      expect(Math.abs(statSync(local('out', 'a.txt')).mtimeMs - Date.parse(remoteMtime))).toBeLessThan(1);

      expect(await syncJson(`${THREAD}:proj`, local('out'))).toMatchObject({ downloaded: 0, skipped: 2 });
      // The directory that was pushed is in sync too: nothing comes back down.
      expect(await syncJson(`${THREAD}:proj`, local('src'))).toMatchObject({ downloaded: 0, skipped: 2 });
    },
    SLOW,
  );

  it(
    'downloads what changed in the sandbox and, with --delete, removes local files it lacks',
    async () => {
      writeFileSync(local('other.txt'), 'changed in the sandbox\n');
      expect((await cli.sbx(['cp', local('other.txt'), `${THREAD}:proj/a.txt`])).code).toBe(0);
      writeFileSync(local('out', 'local-only.txt'), 'mine\n');
      const pulled = await syncJson(`${THREAD}:proj`, local('out'));
      expect(pathsOf(pulled, 'download')).toEqual(['a.txt']);
      expect(readFileSync(local('out', 'a.txt'), 'utf8')).toBe('changed in the sandbox\n');
      expect(readFileSync(local('out', 'local-only.txt'), 'utf8')).toBe('mine\n');

      const mirrored = await syncJson(`${THREAD}:proj`, local('out'), '--delete');
      expect(pathsOf(mirrored, 'delete')).toEqual(['local-only.txt']);
      expect(existsSync(local('out', 'local-only.txt'))).toBe(false);
    },
    SLOW,
  );
});

describe('sbx sync --watch', () => {
  it(
    'pushes files created after it started, one line each, and ends cleanly on SIGTERM',
    async () => {
      mkdirSync(local('live'));
      writeFileSync(local('live', 'first.txt'), 'first\n');
      const watcher = startWatch(cli.home, [local('live'), `${THREAD}:live`]);
      try {
        await watcher.waitFor('stderr', new RegExp(`watching .*live → thr_sync:${escaped(workspace)}/live`));
        expect(watcher.output('stdout')).toMatch(/^uploaded +first\.txt/m);
        writeAtomically(local('live', 'later.txt'), 'written after the start\n');
        await watcher.waitFor('stdout', /^uploaded +later\.txt \(24 B\)$/m);
        expect(await remoteText('live/later.txt')).toBe('written after the start\n');
        mkdirSync(local('live', 'sub'));
        writeAtomically(local('live', 'sub', 'deeper.txt'), 'deeper\n');
        await watcher.waitFor('stdout', /^uploaded +sub\/deeper\.txt/m);
        expect(await remoteText('live/sub/deeper.txt')).toBe('deeper\n');

        watcher.child.kill('SIGTERM');
        expect(await watcher.exited).toBe(0);
        expect(watcher.output('stdout')).toMatch(
          new RegExp(
            `^push .* → thr_sync:${escaped(workspace)}/live: 3 uploaded, 1 directories created, `,
            'm',
          ),
        );
      } finally {
        watcher.child.kill('SIGKILL');
      }
    },
    SLOW,
  );
});

describe('sbx sync: mistakes', () => {
  it(
    'answers usage errors with exit 2 and a missing directory with exit 4',
    async () => {
      expect((await cli.sbx(['sync', local('src')])).code).toBe(2);
      expect((await cli.sbx(['sync', `${THREAD}:a`, `${THREAD}:b`])).code).toBe(2);
      expect((await cli.sbx(['sync', `${THREAD}:proj`, local('out'), '--watch'])).code).toBe(2);
      const missing = await cli.sbx(['sync', local('nope'), THREAD]);
      expect(missing.code).toBe(4);
      expect(missing.stderr).toMatch(/no such directory/);
      const remoteMissing = await cli.sbx(['sync', `${THREAD}:nope`, local('out2')]);
      expect(remoteMissing.code).toBe(4);
      expect(remoteMissing.stderr.trimEnd().split('\n')).toHaveLength(1);
    },
    SLOW,
  );
});
