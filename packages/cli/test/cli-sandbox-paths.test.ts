// `<thread>:<path>` is a sandbox path, the same for `cp`, `cat`, `ls`, `rm` and `exec`: relative
// to the workspace, or absolute anywhere in the sandbox (`/tmp/f`, `/etc/os-release`), where
// the sandbox user's permissions decide. A real broker with real sandboxes, `sbx` as a process.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CliStore } from '../src/store.js';
import { logInAndEnsure, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
const THREAD = 'thr_paths';
let real: RealBroker;
let cli: SbxRunner;
let local: string;
let workspace: string;

const oneLine = (text: string): boolean => text.trimEnd().split('\n').length === 1;
/** Under bubblewrap the sandbox's root is read-only to its user; unconfined it is the host's. */
const confined = (): boolean => real.harness.provider.isolation === 'bubblewrap';

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  await logInAndEnsure(cli, real.harness.url, real.apiKey, [THREAD]);
  local = path.dirname(cli.home);
  const cached = new CliStore(cli.home).readThreads()[THREAD]?.workspace_path;
  if (cached === undefined) throw new Error(`no workspace path cached for ${THREAD}`);
  workspace = cached;
}, SLOW);

afterAll(async () => {
  await cli?.sbx(['release', THREAD]);
  await real?.close();
  cli?.close();
}, SLOW);

describe('sbx on paths of the sandbox', () => {
  it(
    'a file cp puts at thr:dir/x.txt is the dir/x.txt that exec sees, relative or absolute',
    async () => {
      writeFileSync(path.join(local, 'x.txt'), 'one file system\n');
      const ws = workspace;
      // With LOCAL_ISOLATION=none the absolute name is the workspace's host path.
      expect(ws).toMatch(confined() ? /^\/workspace$/ : /^\/(?!workspace$)./);
      expect((await cli.sbx(['cp', path.join(local, 'x.txt'), `${THREAD}:dir/x.txt`])).code).toBe(0);
      const seen = { code: 0, stdout: 'one file system\n', stderr: '' };
      expect(await cli.sbx(['exec', THREAD, '--', 'cat', 'dir/x.txt'])).toEqual(seen);
      expect(await cli.sbx(['exec', THREAD, '--', 'cat', `${ws}/dir/x.txt`])).toEqual(seen);
      // --cwd is a sandbox path too; the default cwd is the workspace.
      expect((await cli.sbx(['exec', THREAD, '--cwd', 'dir', '--', 'cat', 'x.txt'])).stdout).toBe(
        'one file system\n',
      );
      expect((await cli.sbx(['exec', THREAD, '--', 'pwd'])).stdout).toBe(`${ws}\n`);
      // And back: what a command writes, cat reads by either name.
      const made = await cli.sbx([
        'exec',
        THREAD,
        '--cwd',
        `${ws}/dir`,
        '--',
        'sh',
        '-c',
        'echo made > y.txt',
      ]);
      expect(made.code).toBe(0);
      expect((await cli.sbx(['cat', `${THREAD}:dir/y.txt`])).stdout).toBe('made\n');
      expect((await cli.sbx(['cat', `${THREAD}:${ws}/dir/y.txt`])).stdout).toBe('made\n');
      expect((await cli.sbx(['rm', '-r', `${THREAD}:dir`])).code).toBe(0);
    },
    SLOW,
  );

  it(
    'cp to /tmp and back: exec reads what cp wrote there, cp fetches what exec wrote, ls lists /tmp',
    async () => {
      const name = `sbx-cli-${randomBytes(4).toString('hex')}`;
      const bytes = randomBytes(256 * 1024 + 3);
      writeFileSync(path.join(local, 'up.bin'), bytes);
      writeFileSync(path.join(local, `${name}.txt`), 'into /tmp by name\n');
      const up = await cli.sbx(['cp', path.join(local, 'up.bin'), `${THREAD}:/tmp/${name}.bin`, '--json']);
      expect(up.code).toBe(0);
      expect(JSON.parse(up.stdout)).toMatchObject({ to: `${THREAD}:/tmp/${name}.bin`, bytes: bytes.length });
      // The sandbox's processes see it at /tmp, not in the workspace.
      const script = `wc -c < /tmp/${name}.bin; test -e ${name}.bin || echo not in the workspace`;
      expect(await cli.sbx(['exec', THREAD, '--', 'sh', '-c', script])).toEqual({
        code: 0,
        stdout: `${bytes.length}\nnot in the workspace\n`,
        stderr: '',
      });
      // A directory as target keeps the local name, as scp does.
      expect((await cli.sbx(['cp', path.join(local, `${name}.txt`), `${THREAD}:/tmp/`])).code).toBe(0);
      expect(await cli.sbx(['exec', THREAD, '--', 'cat', `/tmp/${name}.txt`])).toEqual({
        code: 0,
        stdout: 'into /tmp by name\n',
        stderr: '',
      });
      // Back: byte for byte what was uploaded, and what a command wrote there.
      expect((await cli.sbx(['cp', `${THREAD}:/tmp/${name}.bin`, path.join(local, 'down.bin')])).code).toBe(
        0,
      );
      expect(readFileSync(path.join(local, 'down.bin')).equals(bytes)).toBe(true);
      const wrote = await cli.sbx(['exec', THREAD, '--cwd', '/tmp', '--', 'sh', '-c', `pwd > ${name}.out`]);
      expect(wrote.code).toBe(0);
      const back = await cli.sbx(['cp', `${THREAD}:/tmp/${name}.out`, local, '--json']);
      expect(JSON.parse(back.stdout)).toMatchObject({ from: `${THREAD}:/tmp/${name}.out`, bytes: 5 });
      expect(readFileSync(path.join(local, `${name}.out`), 'utf8')).toBe('/tmp\n');

      const listing = await cli.sbx(['ls', `${THREAD}:/tmp`, '--json']);
      expect(listing.code).toBe(0);
      const listed = JSON.parse(listing.stdout) as {
        path: string;
        entries: { name: string; size: number }[];
      };
      expect(listed.path).toBe('/tmp');
      expect(listed.entries.filter((e) => e.name.startsWith(name)).map((e) => [e.name, e.size])).toEqual([
        [`${name}.bin`, bytes.length],
        [`${name}.out`, 5],
        [`${name}.txt`, 18],
      ]);
      expect((await cli.sbx(['ls', `${THREAD}:/tmp`])).stdout).toMatch(
        new RegExp(`^MODE\\s+TYPE\\s+SIZE\\s+MODIFIED\\s+NAME\\n(.*\\n)*.*\\s${name}\\.bin\\n`),
      );
      for (const suffix of ['bin', 'out', 'txt'])
        expect((await cli.sbx(['rm', `${THREAD}:/tmp/${name}.${suffix}`])).code).toBe(0);
      expect((await cli.sbx(['exec', THREAD, '--', 'sh', '-c', `ls /tmp | grep -c ${name}`])).stdout).toBe(
        '0\n',
      );
    },
    SLOW,
  );

  it(
    'sync pushes a directory to /tmp and pulls it back from there',
    async () => {
      const remote = `/tmp/sbx-sync-${randomBytes(4).toString('hex')}`;
      mkdirSync(path.join(local, 'tree/sub'), { recursive: true });
      writeFileSync(path.join(local, 'tree/a.txt'), 'A\n');
      writeFileSync(path.join(local, 'tree/sub/b.txt'), 'B\n');
      const pushed = await cli.sbx(['sync', path.join(local, 'tree'), `${THREAD}:${remote}`, '--json']);
      expect(pushed.code).toBe(0);
      expect(JSON.parse(pushed.stdout)).toMatchObject({ uploaded: 2 });
      expect(
        (await cli.sbx(['exec', THREAD, '--', 'cat', `${remote}/a.txt`, `${remote}/sub/b.txt`])).stdout,
      ).toBe('A\nB\n');
      expect((await cli.sbx(['exec', THREAD, '--', 'sh', '-c', `echo C > ${remote}/sub/c.txt`])).code).toBe(
        0,
      );
      const pulled = await cli.sbx(['sync', `${THREAD}:${remote}`, path.join(local, 'pulled'), '--json']);
      expect(pulled.code).toBe(0);
      expect(JSON.parse(pulled.stdout)).toMatchObject({ downloaded: 3 });
      expect(readFileSync(path.join(local, 'pulled/sub/c.txt'), 'utf8')).toBe('C\n');
      expect((await cli.sbx(['rm', '-r', `${THREAD}:${remote}`])).code).toBe(0);
    },
    SLOW,
  );

  it(
    'cat prints a system file as the sandbox sees it: thr:/etc/os-release',
    async () => {
      const viaExec = await cli.sbx(['exec', THREAD, '--', 'cat', '/etc/os-release']);
      expect(viaExec.code).toBe(0);
      expect(viaExec.stdout).toMatch(/^ID=/m);
      expect(await cli.sbx(['cat', `${THREAD}:/etc/os-release`])).toEqual({
        code: 0,
        stdout: viaExec.stdout,
        stderr: '',
      });
    },
    SLOW,
  );

  it(
    'a write the sandbox user may not make (/etc, under bubblewrap) is exit 3 with the sandbox’s reason',
    async () => {
      // Unconfined, the sandbox's processes are the broker's user (root here): nothing to refuse.
      if (!confined()) return;
      writeFileSync(path.join(local, 'no.txt'), 'no\n');
      const refused = await cli.sbx(['cp', path.join(local, 'no.txt'), `${THREAD}:/etc/sbx-no.txt`]);
      expect(refused.code).toBe(3);
      expect(oneLine(refused.stderr)).toBe(true);
      expect(refused.stderr).toMatch(
        /^sbx: .*\/etc\/sbx-no\.txt .*(read-only file system|permission denied)/,
      );
      expect((await cli.sbx(['exec', THREAD, '--', 'test', '-e', '/etc/sbx-no.txt'])).code).toBe(1);
    },
    SLOW,
  );

  it(
    '/proc is refused (exit 3): the file API does not serve it, exec reads it',
    async () => {
      const proc = await cli.sbx(['cat', `${THREAD}:/proc/self/status`]);
      expect(proc.code).toBe(3);
      expect(proc.stdout).toBe('');
      expect(proc.stderr).toMatch(/^sbx: .*\/proc.*read it with exec/);
    },
    SLOW,
  );
});
