import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestAgent } from '../support/agent-harness.js';
import {
  expectError,
  send,
  Sentinel,
  startFilesAgent,
  uploadTemporaries,
  type RawResponse,
} from './files-test-kit.js';

/**
 * Every way out of the workspace we know of, tried with every operation. Each attempt
 * must be answered with a 4xx envelope, and the sentinel outside the workspace must be
 * exactly as it was. Symlinks used by mutating operations point at the sentinel (not
 * /etc): the tests run as root here, and a broken guard must not be able to hurt the host.
 */
let agent: TestAgent;
let sentinel: Sentinel;
let rw: string;
let out: string;

interface EscapeCase {
  readonly name: string;
  /** The path as sent in a URL path or query (decoded exactly once by the agent). */
  readonly raw: () => string;
}

const CASES: readonly EscapeCase[] = [
  { name: '".." segments', raw: () => `../${out}/sentinel.txt` },
  { name: '%2e%2e', raw: () => `%2e%2e/${out}/sentinel.txt` },
  { name: 'double-encoded %252e%252e', raw: () => `%252e%252e/${out}/sentinel.txt` },
  { name: '..%2f (encoded separator)', raw: () => `..%2f${out}%2fsentinel.txt` },
  { name: 'double-encoded %252f', raw: () => `..%252f${out}%252fsentinel.txt` },
  { name: 'backslashes', raw: () => `..%5c${out.replaceAll('/', '%5c')}%5csentinel.txt` },
  { name: 'a NUL byte', raw: () => 'ok.txt%00.png' },
  { name: 'a control character', raw: () => 'bad%0aname.txt' },
  { name: 'a final symlink to a directory outside', raw: () => 'link-out' },
  { name: 'an intermediate symlink to a directory outside', raw: () => 'link-out/sentinel.txt' },
  { name: 'a final symlink to a file outside', raw: () => 'link-out-file' },
  { name: 'a broken symlink pointing outside', raw: () => 'broken-out' },
  { name: 'a symlink loop', raw: () => 'loop' },
  { name: 'a path through a symlink loop', raw: () => 'loop/inner.txt' },
  { name: 'a FIFO', raw: () => 'fifo' },
  { name: '/dev/null via a symlink', raw: () => 'devnull' },
];

const json = { 'content-type': 'application/json' };
type Operation = (raw: string) => Promise<RawResponse>;

function textOf(raw: string): string {
  return decodeURIComponent(raw);
}

const OPERATIONS: Readonly<Record<string, Operation>> = {
  'read (GET /files)': (raw) => send(agent, { method: 'GET', path: `/files/${raw}`, token: rw }),
  'read (download)': (raw) =>
    send(agent, { method: 'GET', path: `/v1/files/download?path=${raw}`, token: rw }),
  'write (PUT /files)': (raw) =>
    send(agent, { method: 'PUT', path: `/files/${raw}`, token: rw, body: 'pwned' }),
  'write (upload)': (raw) =>
    send(agent, { method: 'POST', path: `/v1/files/upload?path=${raw}`, token: rw, body: 'pwned' }),
  'delete (DELETE /files)': (raw) =>
    send(agent, { method: 'DELETE', path: `/files/${raw}?recursive=true`, token: rw }),
  'delete (DELETE /v1/files)': (raw) =>
    send(agent, { method: 'DELETE', path: `/v1/files?path=${raw}&recursive=true`, token: rw }),
  'move (from)': (raw) =>
    send(agent, {
      method: 'POST',
      path: '/v1/files/move',
      token: rw,
      headers: json,
      body: JSON.stringify({ from: textOf(raw), to: 'moved-away' }),
    }),
  'move (to)': (raw) =>
    send(agent, {
      method: 'POST',
      path: '/v1/files/move',
      token: rw,
      headers: json,
      body: JSON.stringify({ from: 'ok.txt', to: textOf(raw), overwrite: true }),
    }),
  'list (GET /v1/files/list)': (raw) =>
    send(agent, { method: 'GET', path: `/v1/files/list?path=${raw}`, token: rw }),
  'mkdir -p': (raw) =>
    send(agent, {
      method: 'POST',
      path: '/v1/files/mkdir',
      token: rw,
      headers: json,
      body: JSON.stringify({ path: `${textOf(raw)}/x`, parents: true }),
    }),
};

function fixtures(): Record<string, string> {
  const ws = agent.workspace;
  return {
    'link-out': readlinkSync(path.join(ws, 'link-out')),
    'link-out-file': readlinkSync(path.join(ws, 'link-out-file')),
    'broken-out': readlinkSync(path.join(ws, 'broken-out')),
    loop: readlinkSync(path.join(ws, 'loop')),
    devnull: readlinkSync(path.join(ws, 'devnull')),
    fifo: String(lstatSync(path.join(ws, 'fifo')).isFIFO()),
    'ok.txt': readFileSync(path.join(ws, 'ok.txt'), 'utf8'),
  };
}

let before: Record<string, string>;

beforeAll(async () => {
  agent = await startFilesAgent();
  sentinel = new Sentinel();
  rw = agent.token(['fs:rw']);
  out = path.relative(agent.workspace, sentinel.dir);
  const ws = agent.workspace;
  writeFileSync(path.join(ws, 'ok.txt'), 'ok');
  symlinkSync(sentinel.dir, path.join(ws, 'link-out'));
  symlinkSync(sentinel.file, path.join(ws, 'link-out-file'));
  symlinkSync(path.join(sentinel.dir, 'missing.txt'), path.join(ws, 'broken-out'));
  symlinkSync('loop', path.join(ws, 'loop'));
  symlinkSync('/dev/null', path.join(ws, 'devnull'));
  symlinkSync('/etc', path.join(ws, 'link-etc'));
  execFileSync('mkfifo', [path.join(ws, 'fifo')]);
  before = fixtures();
});

afterAll(async () => {
  await agent.close();
  sentinel.remove();
});

describe.each(Object.entries(OPERATIONS))('%s', (_operation, run) => {
  it.each(CASES)('refuses $name and touches nothing outside', async ({ raw }) => {
    const res = await run(raw());
    expect([400, 403, 404, 409]).toContain(res.status);
    expectError(res, expectedCode(res.status), res.status);
    expect(sentinel.state()).toEqual(sentinel.original);
    expect(fixtures()).toEqual(before);
    expect(existsSync(path.join(agent.workspace, 'moved-away'))).toBe(false);
    expect(uploadTemporaries(agent.workspace)).toEqual([]);
  });
});

function expectedCode(status: number): 'BAD_REQUEST' | 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT' {
  if (status === 400) return 'BAD_REQUEST';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  return 'CONFLICT';
}

describe('what each refusal says', () => {
  it('names the reason: traversal, encoding, symlinks leaving, loops, special files', async () => {
    const read = (raw: string): Promise<RawResponse> =>
      send(agent, { method: 'GET', path: `/files/${raw}`, token: rw });
    expect(expectError(await read(`../${out}/sentinel.txt`), 'BAD_REQUEST', 400)).toMatch(/"\.\."/);
    expect(expectError(await read('%252e%252e/x'), 'BAD_REQUEST', 400)).toMatch(/percent-encoded/);
    expect(expectError(await read('..%2fx'), 'BAD_REQUEST', 400)).toMatch(/encoded "\/"/);
    expect(expectError(await read('link-etc'), 'FORBIDDEN', 403)).toMatch(/outside the workspace/);
    expect(expectError(await read('link-etc/hostname'), 'FORBIDDEN', 403)).toMatch(/link-etc .*outside/);
    expect(expectError(await read('loop'), 'BAD_REQUEST', 400)).toMatch(/loop/);
    expect(expectError(await read('fifo'), 'FORBIDDEN', 403)).toMatch(/FIFO/);
    expect(expectError(await read('devnull'), 'FORBIDDEN', 403)).toMatch(/outside/);
  });

  it('maps absolute paths into the workspace: /etc/passwd is <workspace>/etc/passwd', async () => {
    expectError(await send(agent, { method: 'GET', path: '/files/etc/passwd', token: rw }), 'NOT_FOUND', 404);
    expectError(
      await send(agent, { method: 'GET', path: '/v1/files/download?path=/etc/passwd', token: rw }),
      'NOT_FOUND',
      404,
    );
    const put = await send(agent, {
      method: 'PUT',
      path: `/files/${sentinel.file}`,
      token: rw,
      body: 'inside',
    });
    expect(put.status).toBe(201);
    expect(readFileSync(path.join(agent.workspace, sentinel.file), 'utf8')).toBe('inside');
    expect(sentinel.state()).toEqual(sentinel.original);
  });

  it('lists a directory through an inside symlink but never follows one out of it', async () => {
    const res = await send(agent, { method: 'GET', path: '/v1/files/list?path=/', token: rw });
    expect(res.status).toBe(200);
    expectError(
      await send(agent, { method: 'GET', path: '/v1/files/list?path=link-etc', token: rw }),
      'FORBIDDEN',
      403,
    );
  });
});
