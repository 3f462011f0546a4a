import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { lstatSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import type { TestAgent } from '../support/agent-harness.js';
import {
  expectError,
  FILE_OPERATION_NAMES,
  fileOperations,
  NOT_SERVED,
  SANDBOX_PATH_OPERATION_NAMES,
  send,
  Sentinel,
  startFilesAgent,
  treeOf,
  uploadTemporaries,
  type FileOperation,
  type FileOperationName,
  type RawResponse,
} from './files-test-kit.js';

/**
 * What the file API still refuses, tried with every operation. Paths outside the
 * workspace are the sandbox's own (files-outside-workspace.test.ts); what stays refused
 * is a malformed path or a symlink loop (400), `/proc` and every way a symlink can lead
 * there (403), and FIFOs, sockets and devices (403). Every attempt must be answered with
 * its envelope and change nothing: not the sentinel outside the workspace the malformed
 * paths aim at, not a fixture, no new entry anywhere in the workspace. Mutating attempts
 * aim at the sentinel or into /proc, never at a real system file: the tests run as root
 * here, and a broken guard must not be able to hurt the host.
 */
let agent: TestAgent;
let sentinel: Sentinel;
let operations: Record<FileOperationName, FileOperation>;
let socketServer: Server;
/** The sentinel directory relative to the workspace: `../sbx-files-sentinel-…`. */
let out: string;

const DOT_DOT = /must not contain "\.\." segments/;
const ENCODED = /percent-encoded dot, slash, backslash or control character/;
const CONTROL = /NUL or control characters/;
const LOOP = /is a symbolic link loop/;

interface RefusalCase {
  readonly name: string;
  /** The path as sent in a URL path or query (decoded exactly once by the agent). */
  readonly raw: () => string;
}

/** 400 with every operation: refused by shape (or as a loop), before anything is touched. */
const MALFORMED: ReadonlyArray<RefusalCase & { readonly reason: RegExp }> = [
  { name: '".." segments', raw: () => `../${out}/sentinel.txt`, reason: DOT_DOT },
  {
    name: '".." after an absolute path',
    raw: () => `${agent.workspace}/../${out}/sentinel.txt`,
    reason: DOT_DOT,
  },
  { name: '%2e%2e', raw: () => `%2e%2e/${out}/sentinel.txt`, reason: DOT_DOT },
  { name: 'double-encoded %252e%252e', raw: () => `%252e%252e/${out}/sentinel.txt`, reason: ENCODED },
  // Decoded once, a query's or body's %2f is a plain "/" (then ".." is refused); a URL segment's is refused.
  {
    name: '..%2f (encoded separator)',
    raw: () => `..%2f${out}%2fsentinel.txt`,
    reason: /"\.\."|encoded "\/"/,
  },
  { name: 'double-encoded %252f', raw: () => `..%252f${out}%252fsentinel.txt`, reason: ENCODED },
  {
    name: 'backslashes',
    raw: () => `..%5c${out.replaceAll('/', '%5c')}%5csentinel.txt`,
    reason: /backslashes/,
  },
  { name: 'a NUL byte', raw: () => 'ok.txt%00.png', reason: CONTROL },
  { name: 'a control character', raw: () => 'bad%0aname.txt', reason: CONTROL },
  { name: 'a symlink loop', raw: () => 'loop', reason: LOOP },
  { name: 'a path through a symlink loop', raw: () => 'loop/inner.txt', reason: LOOP },
];

/** 403 with every operation: symlinks in the workspace that lead into /proc, each its own way. */
const INTO_PROC: readonly RefusalCase[] = [
  { name: 'a final symlink to a file in /proc', raw: () => 'proc-file' },
  { name: 'a final symlink to a directory in /proc', raw: () => 'proc-dir' },
  { name: 'an intermediate symlink into /proc', raw: () => 'proc-dir/status' },
  { name: 'a broken symlink into /proc', raw: () => 'proc-broken' },
  { name: 'a relative symlink climbing to /proc', raw: () => 'proc-climb' },
  { name: 'an absolute symlink climbing to /proc with ".."', raw: () => 'abs-dotdot/status' },
  { name: 'a ".." taken from where the previous link led', raw: () => 'dotdot-after-link' },
  { name: 'a chain of symlinks ending in /proc', raw: () => 'chain' },
  { name: 'a symlink to / followed by /proc', raw: () => 'root-link/proc/self/status' },
  { name: "a symlink to the system's /dev/fd (itself a link into /proc)", raw: () => 'fd-link/0' },
];

/** 403 for the operations that take a sandbox path: /proc named directly. */
const PROC_BY_NAME: readonly RefusalCase[] = [
  { name: '/proc itself', raw: () => '/proc' },
  { name: 'a file in /proc', raw: () => '/proc/self/status' },
  { name: 'a directory in /proc', raw: () => '/proc/self' },
  { name: 'a missing path in /proc', raw: () => '/proc/sbx-no-such-entry' },
  { name: 'a path through /dev/fd', raw: () => '/dev/fd/0' },
];

/** Special files: never opened, written, listed, moved, replaced or deleted (403). */
const SPECIAL: ReadonlyArray<RefusalCase & { readonly kind: RegExp }> = [
  { name: 'a FIFO', raw: () => 'fifo', kind: /is a FIFO/ },
  { name: 'a socket', raw: () => 'sock', kind: /is a socket/ },
  ...(process.getuid?.() === 0 ? [{ name: 'a device', raw: () => 'dev', kind: /is a device/ }] : []),
];

function fixtures(): Record<string, string> {
  const ws = agent.workspace;
  const links = ['proc-file', 'proc-dir', 'proc-broken', 'proc-climb', 'abs-dotdot', 'dotdot-after-link'];
  return {
    ...Object.fromEntries(
      [...links, 'chain', 'hop', 'root-link', 'fd-link', 'link-out', 'loop'].map((name) => [
        name,
        readlinkSync(path.join(ws, name)),
      ]),
    ),
    fifo: String(lstatSync(path.join(ws, 'fifo')).isFIFO()),
    sock: String(lstatSync(path.join(ws, 'sock')).isSocket()),
    'ok.txt': readFileSync(path.join(ws, 'ok.txt'), 'utf8'),
    // Nothing new anywhere in the workspace: no `moved-away`, no `x`, no upload.
    entries: treeOf(ws).join(','),
  };
}

let before: Record<string, string>;

beforeAll(async () => {
  agent = await startFilesAgent();
  sentinel = new Sentinel();
  operations = fileOperations(agent, agent.token(['fs:rw']));
  const ws = agent.workspace;
  out = path.relative(ws, sentinel.dir);
  /** From the workspace up to `/` (`../..`). */
  const up = path.relative(ws, '/');
  writeFileSync(path.join(ws, 'ok.txt'), 'ok');
  symlinkSync('/proc/self/status', path.join(ws, 'proc-file'));
  symlinkSync('/proc/self', path.join(ws, 'proc-dir'));
  symlinkSync('/proc/sbx-no-such-entry', path.join(ws, 'proc-broken'));
  symlinkSync(`${up}/proc/self/status`, path.join(ws, 'proc-climb'));
  symlinkSync(`${ws}/${up}/proc/self`, path.join(ws, 'abs-dotdot'));
  // The kernel applies ".." to the directory the link led to (the sentinel's), not to
  // `link-out`'s own name: read by name, this would be a missing `<tmp>/proc/...`.
  symlinkSync(sentinel.dir, path.join(ws, 'link-out'));
  const upFromSentinelParent = path.relative(path.dirname(sentinel.dir), '/');
  symlinkSync(`link-out/../${upFromSentinelParent}/proc/self/status`, path.join(ws, 'dotdot-after-link'));
  symlinkSync('hop', path.join(ws, 'chain'));
  symlinkSync('root-link/proc/self/status', path.join(ws, 'hop'));
  symlinkSync('/', path.join(ws, 'root-link'));
  symlinkSync('/dev/fd', path.join(ws, 'fd-link'));
  symlinkSync('loop', path.join(ws, 'loop'));
  execFileSync('mkfifo', [path.join(ws, 'fifo')]);
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(path.join(ws, 'sock'), resolve));
  if (process.getuid?.() === 0) execFileSync('mknod', [path.join(ws, 'dev'), 'c', '1', '3']);
  before = fixtures();
});

afterAll(async () => {
  await new Promise((resolve) => socketServer.close(resolve));
  await agent.close();
  sentinel.remove();
});

function expectUntouched(): void {
  expect(sentinel.state()).toEqual(sentinel.original);
  expect(fixtures()).toEqual(before);
  expect(uploadTemporaries(agent.workspace)).toEqual([]);
}

describe.each(FILE_OPERATION_NAMES)('%s', (operation) => {
  it.each(MALFORMED)('refuses $name with 400 and touches nothing', async ({ raw, reason }) => {
    expect(expectError(await operations[operation](raw()), 'BAD_REQUEST', 400)).toMatch(reason);
    expectUntouched();
  });

  it.each(INTO_PROC)('refuses $name with 403 and touches nothing', async ({ raw }) => {
    expect(expectError(await operations[operation](raw()), 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
    expectUntouched();
  });
});

describe.each(SANDBOX_PATH_OPERATION_NAMES)('%s', (operation) => {
  it.each(PROC_BY_NAME)(
    'refuses $name by its absolute path with 403 and touches nothing',
    async ({ raw }) => {
      expect(expectError(await operations[operation](raw()), 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
      expectUntouched();
    },
  );
});

/** Stat describes a special file and mkdir -p finds it is no directory; every other operation refuses it. */
const SPECIAL_OPERATION_NAMES = FILE_OPERATION_NAMES.filter((name) => name !== 'stat' && name !== 'mkdir -p');

describe.each(SPECIAL_OPERATION_NAMES)('%s', (operation) => {
  it.each(SPECIAL)('refuses $name with 403 and touches nothing', async ({ raw, kind }) => {
    expect(expectError(await operations[operation](raw()), 'FORBIDDEN', 403)).toMatch(kind);
    expectUntouched();
  });
});

describe('what each refusal says', () => {
  const read = (raw: string): Promise<RawResponse> =>
    send(agent, { method: 'GET', path: `/files/${raw}`, token: agent.token(['fs:ro']) });

  it('describes a special file on stat, which it will not open, and mkdir -p under it finds no directory', async () => {
    expect(expectError(await read('fifo'), 'FORBIDDEN', 403)).toBe(
      `${agent.workspace}/fifo is a FIFO; only regular files and directories can be read`,
    );
    const stat = await operations.stat('fifo');
    expect(stat.status).toBe(200);
    expect(JSON.parse(stat.body.toString())).toMatchObject({
      path: `${agent.workspace}/fifo`,
      type: 'other',
    });
    expect(expectError(await operations['mkdir -p']('fifo'), 'CONFLICT', 409)).toBe(
      `${agent.workspace}/fifo is not a directory`,
    );
    expectUntouched();
  });

  it('names the link that leads into /proc, and says why /proc is not served', async () => {
    const why =
      "leads into /proc or the agent's own files, which the file API does not serve " +
      "(the agent's /proc is not the sandbox's: read it with exec)";
    expect(expectError(await read('proc-dir/status'), 'FORBIDDEN', 403)).toBe(
      `${agent.workspace}/proc-dir ${why}`,
    );
    expect(expectError(await read('chain'), 'FORBIDDEN', 403)).toBe(`${agent.workspace}/chain ${why}`);
    expect(expectError(await read('root-link/proc/self/status'), 'FORBIDDEN', 403)).toBe(
      `${agent.workspace}/root-link/proc ${why}`,
    );
    const direct = await operations['read (download)']('/proc/self/status');
    expect(expectError(direct, 'FORBIDDEN', 403)).toBe(`/proc ${why}`);
  });

  it('reads the /files/{path} tail as relative: /files//proc/self/status is <workspace>/proc/self/status', async () => {
    expect(expectError(await read('/proc/self/status'), 'NOT_FOUND', 404)).toBe(
      `${agent.workspace}/proc does not exist`,
    );
    const rw = agent.token(['fs:rw']);
    const put = await send(agent, {
      method: 'PUT',
      path: '/files//proc/self/status',
      token: rw,
      body: 'mine',
    });
    expect(put.status).toBe(201);
    expect(JSON.parse(put.body.toString())).toMatchObject({ path: `${agent.workspace}/proc/self/status` });
    expect(readFileSync(path.join(agent.workspace, 'proc/self/status'), 'utf8')).toBe('mine');
    expect((await read('/proc/self/status')).body.toString()).toBe('mine');
    const removed = await send(agent, { method: 'DELETE', path: '/files/proc?recursive=true', token: rw });
    expect(removed.status).toBe(204);
    expectUntouched();
  });
});
