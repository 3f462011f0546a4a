import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { DirectoryListing, PathInfo } from '@sbx/protocol';
import type { TestAgent } from '../support/agent-harness.js';
import { expectError, jsonOf, send, sha256, startFilesAgent } from './files-test-kit.js';

let agent: TestAgent;
let rw: string;
let ro: string;

beforeAll(async () => {
  agent = await startFilesAgent();
  rw = agent.token(['fs:rw']);
  ro = agent.token(['fs:ro']);
});
afterAll(async () => {
  await agent.close();
});

const allBytes = Buffer.from(Array.from({ length: 256 * 4 }, (_, i) => i % 256));

describe('PUT and GET /files/{path}', () => {
  it('round-trips binary content, 201 on create and 200 on replace, with a changing ETag', async () => {
    const created = await send(agent, {
      method: 'PUT',
      path: '/files/bin/all-bytes.bin',
      token: rw,
      body: allBytes,
    });
    expect(created.status).toBe(201);
    const info = PathInfo.parse(jsonOf(created));
    expect(info).toMatchObject({
      path: `${agent.sandboxWorkspace}/bin/all-bytes.bin`,
      name: 'all-bytes.bin',
      type: 'file',
      size: 1024,
    });
    expect(created.headers.etag).toBe(info.etag);
    expect(readFileSync(path.join(agent.workspace, 'bin/all-bytes.bin')).equals(allBytes)).toBe(true);

    const read = await send(agent, { method: 'GET', path: '/files/bin/all-bytes.bin', token: ro });
    expect(read.status).toBe(200);
    expect(read.body.equals(allBytes)).toBe(true);
    expect(read.headers).toMatchObject({
      'content-type': 'application/octet-stream',
      'content-length': '1024',
      'accept-ranges': 'bytes',
      etag: info.etag,
    });
    expect(Date.parse(read.headers['last-modified'] ?? '')).not.toBeNaN();

    const replaced = await send(agent, {
      method: 'PUT',
      path: '/files/bin/all-bytes.bin',
      token: rw,
      body: 'new',
    });
    expect(replaced.status).toBe(200);
    expect(replaced.headers.etag).not.toBe(info.etag);
    expect(
      (await send(agent, { method: 'GET', path: '/files/bin/all-bytes.bin', token: ro })).body.toString(),
    ).toBe('new');
  });

  it('streams files larger than 1 MiB both ways', async () => {
    const big = randomBytes(3 * 1024 * 1024 + 17);
    const put = await send(agent, { method: 'PUT', path: '/files/big/random.bin', token: rw, body: big });
    expect(put.status).toBe(201);
    const got = await send(agent, { method: 'GET', path: '/files/big/random.bin', token: ro });
    expect(got.headers['content-length']).toBe(String(big.length));
    expect(sha256(got.body)).toBe(sha256(big));
  });

  it('names obvious content types, and answers HEAD with headers only', async () => {
    writeFileSync(path.join(agent.workspace, 'data.json'), '{"a":1}');
    const head = await send(agent, { method: 'HEAD', path: '/files/data.json', token: ro });
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('application/json');
    expect(head.headers['content-length']).toBe('7');
    expect(head.body.length).toBe(0);
  });

  it('keeps the permissions of a replaced file', async () => {
    const script = path.join(agent.workspace, 'run.sh');
    writeFileSync(script, 'echo old\n');
    chmodSync(script, 0o755);
    const res = await send(agent, { method: 'PUT', path: '/files/run.sh', token: rw, body: 'echo new\n' });
    expect(PathInfo.parse(jsonOf(res)).mode).toBe('0755');
    expect(statSync(script).mode & 0o777).toBe(0o755);
  });

  it('writes through a symlink that stays inside the workspace', async () => {
    writeFileSync(path.join(agent.workspace, 'target.txt'), 'before');
    symlinkSync('target.txt', path.join(agent.workspace, 'alias.txt'));
    expect(
      (await send(agent, { method: 'PUT', path: '/files/alias.txt', token: rw, body: 'after' })).status,
    ).toBe(200);
    expect(readFileSync(path.join(agent.workspace, 'target.txt'), 'utf8')).toBe('after');
    expect((await send(agent, { method: 'GET', path: '/files/alias.txt', token: ro })).body.toString()).toBe(
      'after',
    );
  });

  it('answers 404 for a missing file and 409 for writing over a directory', async () => {
    expect(
      expectError(await send(agent, { method: 'GET', path: '/files/nope.txt', token: ro }), 'NOT_FOUND', 404),
    ).toBe(`${agent.sandboxWorkspace}/nope.txt does not exist`);
    mkdirSync(path.join(agent.workspace, 'a-dir'));
    expectError(
      await send(agent, { method: 'PUT', path: '/files/a-dir', token: rw, body: 'x' }),
      'CONFLICT',
      409,
    );
  });
});

describe('directory listings', () => {
  it('lists a directory with name, type, size, octal mode and RFC 3339 mtime', async () => {
    const dir = path.join(agent.workspace, 'listing');
    mkdirSync(path.join(dir, 'sub'), { recursive: true });
    writeFileSync(path.join(dir, 'b.txt'), 'hello');
    chmodSync(path.join(dir, 'b.txt'), 0o640);
    symlinkSync('b.txt', path.join(dir, 'link'));
    const absolute = encodeURIComponent(`${agent.sandboxWorkspace}/listing`);
    for (const route of [
      '/files/listing',
      '/files/listing/',
      '/v1/files/list?path=listing',
      `/v1/files/list?path=${absolute}`,
    ]) {
      const res = await send(agent, { method: 'GET', path: route, token: ro });
      expect(res.status).toBe(200);
      const listing = DirectoryListing.parse(jsonOf(res));
      expect(listing.path).toBe(`${agent.sandboxWorkspace}/listing`);
      expect(listing.entries.map(({ name, type }) => [name, type])).toEqual([
        ['b.txt', 'file'],
        ['link', 'symlink'],
        ['sub', 'dir'],
      ]);
      expect(listing.entries[0]).toMatchObject({ size: 5, mode: '0640' });
      expect(
        Math.abs(Date.parse(listing.entries[0]?.mtime ?? '') - statSync(path.join(dir, 'b.txt')).mtimeMs),
      ).toBeLessThan(1);
    }
  });

  it('lists the workspace root at /files and refuses to list a file', async () => {
    const root = DirectoryListing.parse(
      jsonOf(await send(agent, { method: 'GET', path: '/files', token: ro })),
    );
    expect(root.path).toBe(agent.sandboxWorkspace);
    expect(root.entries.map((entry) => entry.name)).toContain('listing');
    expectError(
      await send(agent, { method: 'GET', path: '/v1/files/list?path=data.json', token: ro }),
      'CONFLICT',
      409,
    );
  });
});

describe('normalized /v1/files routes', () => {
  it('uploads and downloads with ?path=', async () => {
    const body = randomBytes(4096);
    const up = await send(agent, {
      method: 'POST',
      path: '/v1/files/upload?path=v1%2Fup.bin',
      token: rw,
      body,
    });
    expect(up.status).toBe(201);
    const down = await send(agent, { method: 'GET', path: '/v1/files/download?path=v1/up.bin', token: ro });
    expect(down.body.equals(body)).toBe(true);
    expect(down.headers.etag).toBe(up.headers.etag);
  });

  it('stats files (with their ETag) and directories', async () => {
    const file = PathInfo.parse(
      jsonOf(await send(agent, { method: 'GET', path: '/v1/files/stat?path=v1/up.bin', token: ro })),
    );
    expect(file).toMatchObject({ path: `${agent.sandboxWorkspace}/v1/up.bin`, type: 'file', size: 4096 });
    const head = await send(agent, { method: 'HEAD', path: '/files/v1/up.bin', token: ro });
    expect(file.etag).toBe(head.headers.etag);
    const dir = PathInfo.parse(
      jsonOf(await send(agent, { method: 'GET', path: '/v1/files/stat?path=v1', token: ro })),
    );
    expect(dir).toMatchObject({ path: `${agent.sandboxWorkspace}/v1`, type: 'dir' });
    expect(dir.etag).toBeUndefined();
    expectError(await send(agent, { method: 'GET', path: '/v1/files/stat', token: ro }), 'BAD_REQUEST', 400);
  });

  it('makes directories, with parents only when asked', async () => {
    const mkdir = (body: unknown): Promise<Awaited<ReturnType<typeof send>>> =>
      send(agent, {
        method: 'POST',
        path: '/v1/files/mkdir',
        token: rw,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await mkdir({ path: 'made' })).status).toBe(201);
    expectError(await mkdir({ path: 'made' }), 'CONFLICT', 409);
    expect((await mkdir({ path: 'made', parents: true })).status).toBe(200);
    expectError(await mkdir({ path: 'deep/er/still' }), 'NOT_FOUND', 404);
    expect(PathInfo.parse(jsonOf(await mkdir({ path: 'deep/er/still', parents: true }))).type).toBe('dir');
    expect(statSync(path.join(agent.workspace, 'deep/er/still')).isDirectory()).toBe(true);
    expectError(await mkdir({ path: 'x', mode: 'bad' }), 'BAD_REQUEST', 400);
  });

  it('moves files and directories, replacing only with overwrite', async () => {
    const move = (body: unknown): Promise<Awaited<ReturnType<typeof send>>> =>
      send(agent, {
        method: 'POST',
        path: '/v1/files/move',
        token: rw,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    writeFileSync(path.join(agent.workspace, 'm1.txt'), 'one');
    writeFileSync(path.join(agent.workspace, 'm2.txt'), 'two');
    expectError(await move({ from: 'm1.txt', to: 'm2.txt' }), 'CONFLICT', 409);
    const moved = await move({ from: 'm1.txt', to: 'm2.txt', overwrite: true });
    expect(PathInfo.parse(jsonOf(moved))).toMatchObject({
      path: `${agent.sandboxWorkspace}/m2.txt`,
      size: 3,
    });
    expect(readFileSync(path.join(agent.workspace, 'm2.txt'), 'utf8')).toBe('one');
    expect(existsSync(path.join(agent.workspace, 'm1.txt'))).toBe(false);
    expect((await move({ from: 'made', to: 'deep/made-moved' })).status).toBe(200);
    expect(statSync(path.join(agent.workspace, 'deep/made-moved')).isDirectory()).toBe(true);
    expectError(await move({ from: 'deep', to: 'deep/er/inside' }), 'BAD_REQUEST', 400);
    expectError(await move({ from: 'gone.txt', to: 'x.txt' }), 'NOT_FOUND', 404);
  });
});

describe('DELETE', () => {
  it('deletes files, empty directories, and non-empty ones only with recursive=true', async () => {
    const ws = agent.workspace;
    mkdirSync(path.join(ws, 'del/full/inner'), { recursive: true });
    writeFileSync(path.join(ws, 'del/full/inner/f.txt'), 'x');
    mkdirSync(path.join(ws, 'del/empty'));
    writeFileSync(path.join(ws, 'del/file.txt'), 'x');
    expect((await send(agent, { method: 'DELETE', path: '/files/del/file.txt', token: rw })).status).toBe(
      204,
    );
    expect(existsSync(path.join(ws, 'del/file.txt'))).toBe(false);
    expect((await send(agent, { method: 'DELETE', path: '/files/del/empty', token: rw })).status).toBe(204);
    const refused = expectError(
      await send(agent, { method: 'DELETE', path: '/files/del/full', token: rw }),
      'CONFLICT',
      409,
    );
    expect(refused).toMatch(/not empty.*recursive=true/);
    expect(existsSync(path.join(ws, 'del/full/inner/f.txt'))).toBe(true);
    expect(
      (await send(agent, { method: 'DELETE', path: '/v1/files?path=del/full&recursive=true', token: rw }))
        .status,
    ).toBe(204);
    expect(existsSync(path.join(ws, 'del/full'))).toBe(false);
    expectError(
      await send(agent, { method: 'DELETE', path: '/files/del/full', token: rw }),
      'NOT_FOUND',
      404,
    );
  });

  it('deletes a symlink itself, never its target, and refuses the workspace root', async () => {
    writeFileSync(path.join(agent.workspace, 'kept.txt'), 'kept');
    symlinkSync('kept.txt', path.join(agent.workspace, 'kept-link'));
    expect((await send(agent, { method: 'DELETE', path: '/files/kept-link', token: rw })).status).toBe(204);
    expect(readFileSync(path.join(agent.workspace, 'kept.txt'), 'utf8')).toBe('kept');
    expectError(
      await send(agent, { method: 'DELETE', path: '/files/?recursive=true', token: rw }),
      'BAD_REQUEST',
      400,
    );
    expect(existsSync(path.join(agent.workspace, 'kept.txt'))).toBe(true);
  });
});
