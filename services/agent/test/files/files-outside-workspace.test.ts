import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DirectoryListing, PathInfo } from '@sbx/protocol';
import type { TestAgent } from '../support/agent-harness.js';
import {
  expectError,
  jsonOf,
  NOT_SERVED,
  send,
  startFilesAgent,
  treeOf,
  type RawResponse,
} from './files-test-kit.js';

/**
 * "The file API sees what the shell sees": an absolute path outside the workspace is the
 * sandbox's own, read, written, listed, moved and deleted like any path (the kernel's
 * permissions decide; the agent runs as the sandbox's user), and a symlink leading out of
 * the workspace is followed. Every write goes to a fresh temporary directory this test
 * made: the tests run as root, and only reads touch real system files.
 */
let agent: TestAgent;
let outside: string;
let rw: string;
const json = { 'content-type': 'application/json' };

beforeAll(async () => {
  agent = await startFilesAgent();
  outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-files-outside-')));
  rw = agent.token(['fs:rw']);
});
afterAll(async () => {
  await agent.close();
  rmSync(outside, { recursive: true, force: true });
});

const query = (target: string): string => encodeURIComponent(target);
const get = (route: string): Promise<RawResponse> => send(agent, { method: 'GET', path: route, token: rw });
const upload = (target: string, body: string): Promise<RawResponse> =>
  send(agent, { method: 'POST', path: `/v1/files/upload?path=${query(target)}`, token: rw, body });
const post = (route: string, body: unknown): Promise<RawResponse> =>
  send(agent, { method: 'POST', path: route, token: rw, headers: json, body: JSON.stringify(body) });
const remove = (target: string, recursive = false): Promise<RawResponse> =>
  send(agent, {
    method: 'DELETE',
    path: `/v1/files?path=${query(target)}&recursive=${recursive}`,
    token: rw,
  });

describe('absolute paths outside the workspace', () => {
  it('reads, stats and lists them by their absolute names', async () => {
    mkdirSync(path.join(outside, 'read/dir'), { recursive: true });
    writeFileSync(path.join(outside, 'read/a.txt'), 'outside A');
    const download = await get(`/v1/files/download?path=${query(`${outside}/read/a.txt`)}`);
    expect({ status: download.status, body: download.body.toString() }).toEqual({
      status: 200,
      body: 'outside A',
    });
    const info = PathInfo.parse(jsonOf(await get(`/v1/files/stat?path=${query(`${outside}/read/a.txt`)}`)));
    expect(info).toMatchObject({ path: `${outside}/read/a.txt`, type: 'file', size: 9 });
    expect(download.headers.etag).toBe(info.etag);
    const listing = DirectoryListing.parse(
      jsonOf(await get(`/v1/files/list?path=${query(`${outside}/read`)}`)),
    );
    expect(listing.path).toBe(`${outside}/read`);
    expect(listing.entries.map(({ name, type }) => [name, type])).toEqual([
      ['a.txt', 'file'],
      ['dir', 'dir'],
    ]);
  });

  it('writes there: creates with parents, replaces, and never remaps into the workspace', async () => {
    const before = treeOf(agent.workspace);
    const created = await upload(`${outside}/write/deep/b.txt`, 'fresh');
    expect(created.status).toBe(201);
    expect(PathInfo.parse(jsonOf(created)).path).toBe(`${outside}/write/deep/b.txt`);
    expect((await upload(`${outside}/write/deep/b.txt`, 'replaced')).status).toBe(200);
    expect(readFileSync(path.join(outside, 'write/deep/b.txt'), 'utf8')).toBe('replaced');
    expect(treeOf(agent.workspace)).toEqual(before);
  });

  it('makes directories, moves in, out and within, and deletes files and trees there', async () => {
    const made = await post('/v1/files/mkdir', { path: `${outside}/made/er`, parents: true });
    expect(made.status).toBe(201);
    expect(PathInfo.parse(jsonOf(made))).toMatchObject({ path: `${outside}/made/er`, type: 'dir' });
    writeFileSync(path.join(agent.workspace, 'in-ws.txt'), 'travels');
    const out = await post('/v1/files/move', { from: 'in-ws.txt', to: `${outside}/made/from-ws.txt` });
    expect(PathInfo.parse(jsonOf(out)).path).toBe(`${outside}/made/from-ws.txt`);
    expect(existsSync(path.join(agent.workspace, 'in-ws.txt'))).toBe(false);
    const back = await post('/v1/files/move', { from: `${outside}/made/from-ws.txt`, to: 'back.txt' });
    expect(PathInfo.parse(jsonOf(back)).path).toBe(`${agent.workspace}/back.txt`);
    expect(readFileSync(path.join(agent.workspace, 'back.txt'), 'utf8')).toBe('travels');
    expect((await post('/v1/files/move', { from: `${outside}/made`, to: `${outside}/renamed` })).status).toBe(
      200,
    );
    expect(lstatSync(path.join(outside, 'renamed/er')).isDirectory()).toBe(true);
    writeFileSync(path.join(outside, 'renamed/er/f.txt'), 'x');
    expect((await remove(`${outside}/renamed/er/f.txt`)).status).toBe(204);
    writeFileSync(path.join(outside, 'renamed/er/g.txt'), 'x');
    expect(expectError(await remove(`${outside}/renamed`), 'CONFLICT', 409)).toMatch(/not empty/);
    expect((await remove(`${outside}/renamed`, true)).status).toBe(204);
    expect(existsSync(path.join(outside, 'renamed'))).toBe(false);
  });

  it('reads system files and lists /, where /proc is an entry it will not open', async () => {
    const release = await get('/v1/files/download?path=/etc/os-release');
    expect(release.status).toBe(200);
    expect(release.body.equals(readFileSync('/etc/os-release'))).toBe(true);
    const root = DirectoryListing.parse(jsonOf(await get('/v1/files/list?path=/')));
    expect(root.path).toBe('/');
    expect(root.entries.filter(({ name }) => name === 'proc' || name === 'tmp')).toEqual([
      expect.objectContaining({ name: 'proc', type: 'dir' }),
      expect.objectContaining({ name: 'tmp', type: 'dir' }),
    ]);
    expect(PathInfo.parse(jsonOf(await get('/v1/files/stat?path=/')))).toMatchObject({
      path: '/',
      type: 'dir',
    });
    expect(expectError(await get('/v1/files/list?path=/proc'), 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
  });

  it('refuses to move or delete / and the workspace itself (400), changing nothing', async () => {
    writeFileSync(path.join(agent.workspace, 'stays.txt'), 'stays');
    // Never recursive on `/`: even a broken guard could not empty anything with these.
    const attempts = [
      remove('/'),
      remove(agent.workspace, true),
      remove('.', true),
      post('/v1/files/move', { from: '/', to: `${outside}/root` }),
      post('/v1/files/move', { from: agent.workspace, to: `${outside}/ws` }),
      post('/v1/files/move', { from: '.', to: `${outside}/ws` }),
    ];
    for (const res of await Promise.all(attempts))
      expect(expectError(res, 'BAD_REQUEST', 400)).toMatch(/itself cannot be moved or deleted/);
    expect(expectError(await post('/v1/files/mkdir', { path: '/' }), 'CONFLICT', 409)).toBe(
      '/ already exists',
    );
    expect(readFileSync(path.join(agent.workspace, 'stays.txt'), 'utf8')).toBe('stays');
    expect([existsSync(`${outside}/root`), existsSync(`${outside}/ws`)]).toEqual([false, false]);
  });

  it('keeps the /files/{path} tail relative: /files/<outside>/x.txt is <workspace>/<outside>/x.txt', async () => {
    const put = await send(agent, {
      method: 'PUT',
      path: `/files${outside}/x.txt`,
      token: rw,
      body: 'inside',
    });
    expect(put.status).toBe(201);
    expect(PathInfo.parse(jsonOf(put)).path).toBe(`${agent.workspace}${outside}/x.txt`);
    expect(readFileSync(path.join(agent.workspace, outside, 'x.txt'), 'utf8')).toBe('inside');
    expect(existsSync(path.join(outside, 'x.txt'))).toBe(false);
    const top = outside.split('/')[1] ?? '';
    expect((await remove(path.join(agent.workspace, top), true)).status).toBe(204);
  });
});

describe('symlinks leading out of the workspace', () => {
  beforeAll(() => {
    const ws = agent.workspace;
    mkdirSync(path.join(outside, 'linked'));
    writeFileSync(path.join(outside, 'linked/target.txt'), 'linked');
    symlinkSync(`${outside}/linked/target.txt`, path.join(ws, 'out-file'));
    symlinkSync(`${outside}/linked`, path.join(ws, 'out-dir'));
    symlinkSync(path.relative(ws, `${outside}/linked/target.txt`), path.join(ws, 'out-climb'));
    symlinkSync(`${ws}/../${path.basename(outside)}/linked`, path.join(ws, 'out-abs-dotdot'));
  });

  it('follows them, final and intermediate, absolute, relative and climbing with ".."', async () => {
    for (const link of ['out-file', 'out-dir/target.txt', 'out-climb', 'out-abs-dotdot/target.txt']) {
      for (const route of [`/files/${link}`, `/v1/files/download?path=${query(link)}`]) {
        const res = await get(route);
        expect({ route, status: res.status, body: res.body.toString() }).toEqual({
          route,
          status: 200,
          body: 'linked',
        });
      }
      // Named as asked, like a process of the sandbox would name it.
      const info = PathInfo.parse(jsonOf(await get(`/v1/files/stat?path=${query(link)}`)));
      expect(info).toMatchObject({ path: `${agent.workspace}/${link}`, type: 'file' });
    }
    const listing = DirectoryListing.parse(jsonOf(await get('/v1/files/list?path=out-dir')));
    expect(listing.path).toBe(`${agent.workspace}/out-dir`);
    expect(listing.entries.map(({ name }) => name)).toContain('target.txt');
  });

  it('writes through them, and deletes or moves a link itself, never its target', async () => {
    const through = await send(agent, { method: 'PUT', path: '/files/out-file', token: rw, body: 'through' });
    expect(through.status).toBe(200);
    expect(readFileSync(path.join(outside, 'linked/target.txt'), 'utf8')).toBe('through');
    expect(lstatSync(path.join(agent.workspace, 'out-file')).isSymbolicLink()).toBe(true);
    const created = await send(agent, {
      method: 'PUT',
      path: '/files/out-dir/new.txt',
      token: rw,
      body: 'new',
    });
    expect(created.status).toBe(201);
    expect(readFileSync(path.join(outside, 'linked/new.txt'), 'utf8')).toBe('new');

    expect((await send(agent, { method: 'DELETE', path: '/files/out-file', token: rw })).status).toBe(204);
    expect(existsSync(path.join(agent.workspace, 'out-file'))).toBe(false);
    expect(readFileSync(path.join(outside, 'linked/target.txt'), 'utf8')).toBe('through');
    expect((await post('/v1/files/move', { from: 'out-dir', to: 'moved-link' })).status).toBe(200);
    expect(lstatSync(path.join(agent.workspace, 'moved-link')).isSymbolicLink()).toBe(true);
    expect(treeOf(path.join(outside, 'linked'))).toEqual(['new.txt', 'target.txt']);
  });
});
