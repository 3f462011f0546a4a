// SbxSandbox against a real broker and real sandboxes: the provider conventions deepagents'
// own providers follow (lifecycle, create with initialFiles, reattach) and the protocol's
// result shapes (errors as values, one answer per path, execute never throwing).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SandboxError, isSandboxBackend } from 'deepagents';
import { SbxSandbox, TIMEOUT_EXIT_CODE, workspacePrompt } from '../src/index.js';
import { startTestBroker, type TestBroker } from './support.js';

const SLOW = 60_000;
let tb: TestBroker;
let shared: SbxSandbox;
let ws: string;
const cleanup: SbxSandbox[] = [];
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | null): string => new TextDecoder().decode(b ?? new Uint8Array());

beforeAll(async () => {
  tb = await startTestBroker();
  shared = await SbxSandbox.create({ broker: tb.broker, timeoutMs: 2_000, maxOutputBytes: 1_000 });
  ws = shared.workspacePath;
}, SLOW);

afterAll(async () => {
  for (const s of [shared, ...cleanup]) await s?.close().catch(() => undefined);
  await tb?.close();
}, SLOW);

describe('lifecycle (as deepagents providers)', () => {
  it(
    'does not provision in the constructor; initialize once; close stops it',
    async () => {
      const sandbox = new SbxSandbox({ broker: tb.broker });
      cleanup.push(sandbox);
      expect(sandbox.isRunning).toBe(false);
      expect(sandbox.id.length).toBeGreaterThan(0);
      expect(isSandboxBackend(sandbox)).toBe(true);
      await expect(sandbox.execute('true')).rejects.toMatchObject({ code: 'NOT_INITIALIZED' });
      await sandbox.initialize();
      expect(sandbox.isRunning).toBe(true);
      expect(sandbox.id).toMatch(/^sbx_|^[a-z]/);
      const again = await sandbox.initialize().catch((err: unknown) => err);
      expect(SandboxError.isInstance(again)).toBe(true);
      expect(again).toMatchObject({ code: 'ALREADY_INITIALIZED', name: 'SbxSandboxError' });
      await sandbox.close();
      expect(sandbox.isRunning).toBe(false);
      await sandbox.close(); // twice is fine
    },
    SLOW,
  );

  it(
    'create() resolves once initial files (nested parents) are written; fromId() reattaches',
    async () => {
      const sandbox = await SbxSandbox.create({
        broker: tb.broker,
        initialFiles: { 'init.txt': 'hello', 'deep/er/nested.txt': 'nested', 'empty.txt': '' },
      });
      cleanup.push(sandbox);
      const [a, b, c] = await sandbox.downloadFiles([
        'init.txt',
        `${sandbox.workspacePath}/deep/er/nested.txt`,
        'empty.txt',
      ]);
      expect([text(a!.content), text(b!.content), text(c!.content)]).toEqual(['hello', 'nested', '']);
      const again = await SbxSandbox.fromId(sandbox.threadId!, { broker: tb.broker });
      cleanup.push(again);
      expect(again.id).toBe(sandbox.id);
      expect((await again.execute('cat init.txt')).output).toBe('hello');
      await expect(SbxSandbox.fromId('thr_never_made', { broker: tb.broker })).rejects.toMatchObject({
        code: 'SANDBOX_UNAVAILABLE',
      });
    },
    SLOW,
  );
});

describe('a lost sandbox', () => {
  it(
    'answers the call that finds it gone as a value, and gives the next call a new sandbox',
    async () => {
      const sandbox = await SbxSandbox.create({ broker: tb.broker });
      cleanup.push(sandbox);
      const before = sandbox.id;
      // Released behind the backend's back: its binding was the sandbox's last, so the sandbox ends.
      await tb.broker.release(sandbox.sessionId!);
      const lost = await sandbox.execute('echo hi');
      expect(lost.exitCode).toBe(1);
      expect(lost.output).toMatch(/could not run the command/);
      expect(await sandbox.execute('echo again')).toEqual({
        output: 'again\n',
        exitCode: 0,
        truncated: false,
      });
      expect(sandbox.id).not.toBe(before);
    },
    SLOW,
  );
});

describe('execute', () => {
  it(
    'runs sh -c in the workspace with stderr merged in order and the real exit code',
    async () => {
      expect(await shared.execute('echo hello')).toEqual({
        output: 'hello\n',
        exitCode: 0,
        truncated: false,
      });
      expect((await shared.execute('exit 42')).exitCode).toBe(42);
      const mixed = await shared.execute('echo one; echo two >&2; echo three');
      expect(mixed.output).toBe('one\ntwo\nthree\n');
      expect((await shared.execute('pwd; echo $HOME')).output).toBe(`${ws}\n${ws}\n`);
      const syntax = await shared.execute('if then');
      expect(syntax.exitCode).not.toBe(0);
      expect(syntax.output).toMatch(/syntax|unexpected/i);
    },
    SLOW,
  );

  it(
    'answers a timeout as exit code 124 with a message, and caps the output',
    async () => {
      const slow = await shared.execute('echo started; sleep 30');
      expect(slow.exitCode).toBe(TIMEOUT_EXIT_CODE);
      expect(slow.output).toMatch(/^started\n[\s\S]*timed out after 2000 ms/);
      const big = await shared.execute('head -c 5000 /dev/zero | tr "\\0" x');
      expect(big.truncated).toBe(true);
      expect(big.output.startsWith('x'.repeat(1_000))).toBe(true);
      expect(big.output).toMatch(/truncated: the command wrote 5000 bytes/);
    },
    SLOW,
  );
});

describe('uploadFiles / downloadFiles', () => {
  it(
    'answers one entry per path, in order, with standard error codes or null',
    async () => {
      const odd = `odd name 'q' "d" $x * ü.txt`;
      const binary = Uint8Array.from({ length: 256 }, (_v, i) => i);
      const up = await shared.uploadFiles([
        ['a.txt', bytes('A')],
        [odd, bytes('odd')],
        ['bin/all.bin', binary],
        ['new\nline.txt', bytes('no')], // the file API refuses control characters in paths
      ]);
      expect(up).toEqual([
        { path: 'a.txt', error: null },
        { path: odd, error: null },
        { path: 'bin/all.bin', error: null },
        { path: 'new\nline.txt', error: 'invalid_path' },
      ]);
      const down = await shared.downloadFiles([
        `${ws}/a.txt`,
        'missing.txt',
        odd,
        'bin/all.bin',
        'bin',
        '/proc/self/status', // the file API does not serve /proc (403)
      ]);
      expect(down.map((d) => d.error)).toEqual([
        null,
        'file_not_found',
        null,
        null,
        'is_directory',
        'permission_denied',
      ]);
      expect(text(down[0]!.content)).toBe('A');
      expect(text(down[2]!.content)).toBe('odd');
      expect(Array.from(down[3]!.content!)).toEqual(Array.from(binary));
      expect(down[1]!.content).toBeNull();
    },
    SLOW,
  );
});

describe('file methods', () => {
  it(
    'write, read, readRaw, edit, ls, grep, glob, delete: errors as values, absent on success',
    async () => {
      const file = `${ws}/src/app.py`;
      const written = await shared.write(file, 'print("hi")\nx = 1\nx = 1\n');
      expect(written).toEqual({ path: file, filesUpdate: null });
      const read = await shared.read(file, 1, 1);
      expect(read).toMatchObject({
        content: 'x = 1',
        startLine: 2,
        endLine: 2,
        totalLines: 3,
        nextOffset: 2,
      });
      expect('error' in read).toBe(false);
      expect((await shared.readRaw(file)).data?.content).toBe('print("hi")\nx = 1\nx = 1\n');
      expect((await shared.edit(file, 'x = 1', 'x = 2')).error).toMatch(/Multiple occurrences/);
      const edited = await shared.edit(file, 'x = 1', 'x = 2', true);
      expect(edited).toEqual({ path: file, filesUpdate: null, occurrences: 2 });
      const ls = await shared.ls(`${ws}/src`);
      expect('error' in ls).toBe(false);
      expect(ls.files?.map((f) => f.path)).toEqual([file]);
      // `/` is the sandbox's root (grep and glob of `/` search the workspace, below).
      expect((await shared.ls('/')).files?.map((f) => f.path)).toEqual(expect.arrayContaining(['/tmp/']));
      const grep = await shared.grep('x = 2');
      expect(grep.matches).toEqual([
        { path: file, line: 2, text: 'x = 2' },
        { path: file, line: 3, text: 'x = 2' },
      ]);
      const glob = await shared.glob('**/*.py');
      expect(glob.files?.map((f) => f.path)).toContain('src/app.py');
      expect((await shared.read(`${ws}/nope.txt`)).error).toMatch(/not found/);
      expect(await shared.delete(`${ws}/src`)).toEqual({ path: `${ws}/src`, filesUpdate: null });
      expect((await shared.delete(`${ws}/src`)).error).toMatch(/not found/);
    },
    SLOW,
  );
});

describe('paths of the whole sandbox', () => {
  it(
    'ls of a missing directory, of a file or below one is an empty list with no error',
    async () => {
      await shared.write(`${ws}/plain.txt`, 'not a directory\n');
      for (const path of [
        `${ws}/no/such/dir`,
        '/no-such-dir',
        `${ws}/plain.txt`,
        `${ws}/plain.txt/x`,
        'plain.txt',
      ])
        expect(await shared.ls(path)).toEqual({ files: [] });
      // Other failures stay errors: the file API does not serve /proc.
      expect((await shared.ls('/proc')).error).toMatch(/\/proc/);
      expect(await shared.delete(`${ws}/plain.txt`)).toEqual({ path: `${ws}/plain.txt`, filesUpdate: null });
    },
    SLOW,
  );

  it(
    'a file under /tmp written or read by the backend is the one execute sees there',
    async () => {
      // The model is told so: the workspace for its work, other absolute paths too.
      expect(workspacePrompt(ws)).toMatch(/keep your files there.*Other absolute paths .*work too.*\/tmp/s);
      expect(await shared.write('/tmp/lg/x.txt', 'hello tmp\n')).toEqual({
        path: '/tmp/lg/x.txt',
        filesUpdate: null,
      });
      expect(await shared.execute('cat /tmp/lg/x.txt; test -e x.txt || echo not in the workspace')).toEqual({
        output: 'hello tmp\nnot in the workspace\n',
        exitCode: 0,
        truncated: false,
      });
      expect((await shared.execute('echo from the shell > /tmp/lg/y.txt')).exitCode).toBe(0);
      expect(await shared.read('/tmp/lg/y.txt')).toMatchObject({ content: 'from the shell', totalLines: 1 });
      const [down] = await shared.downloadFiles(['/tmp/lg/y.txt']);
      expect(down).toMatchObject({ path: '/tmp/lg/y.txt', error: null });
      expect(text(down!.content)).toBe('from the shell\n');
      expect((await shared.ls('/tmp/lg')).files?.map((f) => f.path)).toEqual([
        '/tmp/lg/x.txt',
        '/tmp/lg/y.txt',
      ]);
      expect((await shared.grep('hello', '/tmp/lg')).matches).toEqual([
        { path: '/tmp/lg/x.txt', line: 1, text: 'hello tmp' },
      ]);
      expect(await shared.delete('/tmp/lg')).toEqual({ path: '/tmp/lg', filesUpdate: null });
      expect((await shared.execute('test -e /tmp/lg')).exitCode).toBe(1);
    },
    SLOW,
  );

  it(
    'a write where the sandbox user may not write is permission_denied, not invalid_path',
    async () => {
      // Unconfined, the sandbox's processes are the broker's user (root here): nothing to refuse.
      if (tb.real.harness.provider.isolation !== 'bubblewrap') return;
      expect(await shared.uploadFiles([['/etc/evil.txt', bytes('no')]])).toEqual([
        { path: '/etc/evil.txt', error: 'permission_denied' },
      ]);
      expect(await shared.write('/etc/evil.txt', 'no')).toEqual({
        error: 'Failed to write to /etc/evil.txt: permission_denied',
      });
      expect((await shared.execute('test -e /etc/evil.txt')).exitCode).toBe(1);
      // Readable, as for the sandbox's processes.
      expect((await shared.read('/etc/os-release')).content).toMatch(/^ID=/m);
      // A directory its user may not read is an error with the sandbox's reason, not an empty list.
      expect((await shared.execute('mkdir -p /tmp/locked && chmod 000 /tmp/locked')).exitCode).toBe(0);
      expect((await shared.ls('/tmp/locked')).error).toMatch(/permission denied on \/tmp\/locked/);
      expect((await shared.execute('chmod 700 /tmp/locked && rmdir /tmp/locked')).exitCode).toBe(0);
    },
    SLOW,
  );
});
