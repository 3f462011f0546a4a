import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { DirectoryListing, PathInfo } from '@sbx/protocol';
import type { TestAgent } from '../support/agent-harness.js';
import {
  expectError,
  jsonOf,
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
 *
 * Paths are sandbox paths: relative ones are relative to the workspace, absolute ones are
 * what the sandbox's processes see (with the direct launcher used here, the host path of
 * the workspace, `agent.sandboxWorkspace`) and must lie inside it.
 */
let agent: TestAgent;
let sentinel: Sentinel;
/** A sibling of the workspace whose name starts with the workspace's: `<workspace>-sibling`. */
let sibling: Sentinel;
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
  { name: 'an absolute symlink climbing out with ".."', raw: () => 'abs-dotdot/sentinel.txt' },
  { name: 'a relative symlink climbing above the workspace and back', raw: () => 'climb-back' },
  { name: 'a symlink to /workspace (not the workspace without bubblewrap)', raw: () => 'slash-workspace' },
  { name: 'a symlink to the workspace-named sibling', raw: () => 'link-sibling/sentinel.txt' },
  { name: 'a symlink loop', raw: () => 'loop' },
  { name: 'a path through a symlink loop', raw: () => 'loop/inner.txt' },
  { name: 'a FIFO', raw: () => 'fifo' },
  { name: '/dev/null via a symlink', raw: () => 'devnull' },
];

/**
 * Absolute sandbox paths outside the workspace. Only the routes that take a sandbox path
 * (query and JSON body) see them as absolute; the `/files/{path}` tail is relative to the
 * workspace (see 'what each refusal says').
 */
const ABSOLUTE_CASES: readonly EscapeCase[] = [
  { name: 'a file outside', raw: () => sentinel.file },
  { name: 'a directory outside', raw: () => sentinel.dir },
  { name: 'the sandbox root /', raw: () => '/' },
  { name: 'a sibling named like the workspace', raw: () => `${sibling.dir}/sentinel.txt` },
  { name: 'an encoded absolute path', raw: () => encodeURIComponent(sentinel.file) },
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
    'abs-dotdot': readlinkSync(path.join(ws, 'abs-dotdot')),
    'climb-back': readlinkSync(path.join(ws, 'climb-back')),
    'slash-workspace': readlinkSync(path.join(ws, 'slash-workspace')),
    'link-sibling': readlinkSync(path.join(ws, 'link-sibling')),
    loop: readlinkSync(path.join(ws, 'loop')),
    devnull: readlinkSync(path.join(ws, 'devnull')),
    fifo: String(lstatSync(path.join(ws, 'fifo')).isFIFO()),
    'ok.txt': readFileSync(path.join(ws, 'ok.txt'), 'utf8'),
    // Nothing new anywhere in the workspace (an absolute path must never be remapped into it).
    entries: treeOf(ws).join(','),
  };
}

/** Every name under `dir`, never following a symlink (readdirSync's `recursive` does). */
function treeOf(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const name = `${prefix}${entry.name}`;
      return entry.isDirectory() ? [name, ...treeOf(path.join(dir, entry.name), `${name}/`)] : [name];
    })
    .toSorted();
}

let before: Record<string, string>;

beforeAll(async () => {
  agent = await startFilesAgent();
  sentinel = new Sentinel();
  sibling = new Sentinel(`${agent.workspace}-sibling`);
  rw = agent.token(['fs:rw']);
  out = path.relative(agent.workspace, sentinel.dir);
  const ws = agent.workspace;
  writeFileSync(path.join(ws, 'ok.txt'), 'ok');
  symlinkSync(sentinel.dir, path.join(ws, 'link-out'));
  // Absolute targets are sandbox paths: `${workspace}/..` climbs out of the workspace.
  symlinkSync(`${agent.sandboxWorkspace}/../${out}`, path.join(ws, 'abs-dotdot'));
  // Ends inside, but a relative target may not climb above the workspace on the way.
  symlinkSync(`../${path.basename(ws)}/ok.txt`, path.join(ws, 'climb-back'));
  symlinkSync('/workspace/ok.txt', path.join(ws, 'slash-workspace'));
  symlinkSync(sibling.dir, path.join(ws, 'link-sibling'));
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
  sibling.remove();
});

function expectUntouched(): void {
  expect(sentinel.state()).toEqual(sentinel.original);
  expect(sibling.state()).toEqual(sibling.original);
  expect(fixtures()).toEqual(before);
  expect(existsSync(path.join(agent.workspace, 'moved-away'))).toBe(false);
  expect(uploadTemporaries(agent.workspace)).toEqual([]);
}

describe.each(Object.entries(OPERATIONS))('%s', (_operation, run) => {
  it.each(CASES)('refuses $name and touches nothing outside', async ({ raw }) => {
    const res = await run(raw());
    expect([400, 403, 404, 409]).toContain(res.status);
    expectError(res, expectedCode(res.status), res.status);
    expectUntouched();
  });
});

/** The operations whose path is a sandbox path (query or JSON body), not a `/files/` URL tail. */
const SANDBOX_PATH_OPERATIONS = Object.entries(OPERATIONS).filter(([name]) => !name.endsWith(' /files)'));

describe.each(SANDBOX_PATH_OPERATIONS)('%s', (_operation, run) => {
  it.each(ABSOLUTE_CASES)(
    'refuses an absolute path: $name, with 403 naming the workspace',
    async ({ raw }) => {
      const res = await run(raw());
      expect(expectError(res, 'FORBIDDEN', 403)).toContain(`outside the workspace ${agent.sandboxWorkspace}`);
      expect(jsonOf(res)).toMatchObject({ error: { details: { workspace: agent.sandboxWorkspace } } });
      expectUntouched();
    },
  );

  it('refuses the absolute workspace path followed by ".." with 400', async () => {
    const res = await run(`${agent.sandboxWorkspace}/../${out}/sentinel.txt`);
    expect(expectError(res, 'BAD_REQUEST', 400)).toMatch(/"\.\."/);
    expectUntouched();
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
    expect(expectError(await read('abs-dotdot/sentinel.txt'), 'FORBIDDEN', 403)).toBe(
      `${agent.sandboxWorkspace}/abs-dotdot is a symbolic link that leads outside the workspace`,
    );
    expect(expectError(await read('climb-back'), 'FORBIDDEN', 403)).toMatch(/climb-back .*outside/);
    expect(expectError(await read('slash-workspace'), 'FORBIDDEN', 403)).toMatch(/slash-workspace .*outside/);
    expect(expectError(await read('loop'), 'BAD_REQUEST', 400)).toMatch(/loop/);
    expect(expectError(await read('fifo'), 'FORBIDDEN', 403)).toMatch(/FIFO/);
    expect(expectError(await read('devnull'), 'FORBIDDEN', 403)).toMatch(/outside/);
  });

  it('names the workspace when an absolute path lies outside it, and never remaps it', async () => {
    for (const route of ['/v1/files/download?path=/etc/passwd', '/v1/files/stat?path=/etc/passwd']) {
      const res = await send(agent, { method: 'GET', path: route, token: rw });
      expect(expectError(res, 'FORBIDDEN', 403)).toBe(
        `/etc/passwd is outside the workspace ${agent.sandboxWorkspace}; the file API serves the ` +
          'workspace only (an absolute path inside it, or a path relative to it)',
      );
    }
    expect(existsSync(path.join(agent.workspace, 'etc'))).toBe(false);
    const upload = await send(agent, {
      method: 'POST',
      path: `/v1/files/upload?path=${sentinel.file}`,
      token: rw,
      body: 'pwned',
    });
    expect(expectError(upload, 'FORBIDDEN', 403)).toContain(
      `outside the workspace ${agent.sandboxWorkspace}`,
    );
    expect(sentinel.state()).toEqual(sentinel.original);
    expect(existsSync(path.join(agent.workspace, 'tmp'))).toBe(false);
  });

  it('reads the /files/{path} tail as relative: /files//etc/passwd is <workspace>/etc/passwd', async () => {
    expect(
      expectError(
        await send(agent, { method: 'GET', path: '/files//etc/passwd', token: rw }),
        'NOT_FOUND',
        404,
      ),
    ).toBe(`${agent.sandboxWorkspace}/etc does not exist`);
    const inside = path.join(agent.workspace, sentinel.file);
    const put = await send(agent, {
      method: 'PUT',
      path: `/files/${sentinel.file}`,
      token: rw,
      body: 'inside',
    });
    expect(put.status).toBe(201);
    expect(PathInfo.parse(jsonOf(put)).path).toBe(`${agent.sandboxWorkspace}${sentinel.file}`);
    expect(readFileSync(inside, 'utf8')).toBe('inside');
    const got = await send(agent, { method: 'GET', path: `/files/${sentinel.file}`, token: rw });
    expect(got.body.toString()).toBe('inside');
    expect((await send(agent, { method: 'DELETE', path: `/files/${sentinel.file}`, token: rw })).status).toBe(
      204,
    );
    expect(existsSync(inside)).toBe(false);
    expect(sentinel.state()).toEqual(sentinel.original);
  });

  it('lists the workspace root and a directory through an inside symlink, never following one out', async () => {
    mkdirSync(path.join(agent.workspace, 'inside-dir'));
    writeFileSync(path.join(agent.workspace, 'inside-dir/in.txt'), 'in');
    symlinkSync(`${agent.sandboxWorkspace}/inside-dir`, path.join(agent.workspace, 'link-in-abs'));
    symlinkSync('inside-dir', path.join(agent.workspace, 'link-in-rel'));
    for (const root of ['.', encodeURIComponent(agent.sandboxWorkspace)]) {
      const res = await send(agent, { method: 'GET', path: `/v1/files/list?path=${root}`, token: rw });
      expect(res.status).toBe(200);
      const listing = DirectoryListing.parse(jsonOf(res));
      expect(listing.path).toBe(agent.sandboxWorkspace);
      expect(listing.entries.map((entry) => entry.name)).toContain('link-etc');
    }
    for (const link of ['link-in-abs', 'link-in-rel']) {
      const res = await send(agent, { method: 'GET', path: `/v1/files/list?path=${link}`, token: rw });
      const listing = DirectoryListing.parse(jsonOf(res));
      expect(listing).toMatchObject({ path: `${agent.sandboxWorkspace}/${link}` });
      expect(listing.entries.map((entry) => entry.name)).toEqual(['in.txt']);
    }
    expectError(
      await send(agent, { method: 'GET', path: '/v1/files/list?path=link-etc', token: rw }),
      'FORBIDDEN',
      403,
    );
  });
});
