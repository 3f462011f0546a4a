import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestAgent } from '../support/agent-harness.js';
import {
  eventually,
  expectError,
  send,
  sha256,
  startFilesAgent,
  uploadTemporaries,
} from './files-test-kit.js';
import { openUpload, patternChunks, streamUpload } from './upload-client.js';

const LIMIT = 256 * 1024;
const OLD = 'the old content\n';

let agent: TestAgent;
let rw: string;
let target: string;

beforeAll(async () => {
  agent = await startFilesAgent({ maxUploadBytes: LIMIT });
  rw = agent.token(['fs:rw']);
  target = path.join(agent.workspace, 'doc.txt');
});
beforeEach(() => {
  writeFileSync(target, OLD);
});
afterAll(async () => {
  await agent.close();
});

function expectOldFileAndNoTemporaries(): void {
  expect(readFileSync(target, 'utf8')).toBe(OLD);
  expect(uploadTemporaries(agent.workspace)).toEqual([]);
}

describe('upload limit', () => {
  it('refuses a declared Content-Length over the limit with 413 before reading the body', async () => {
    const res = await streamUpload(agent, {
      path: '/files/doc.txt',
      token: rw,
      chunks: patternChunks(1, 8, 64 * 1024),
      contentLength: 8 * 64 * 1024,
    });
    expect(expectError(res, 'PAYLOAD_TOO_LARGE', 413)).toContain(String(LIMIT));
    expectOldFileAndNoTemporaries();
  });

  it('counts a chunked body while streaming and stops at the limit with 413', async () => {
    const res = await streamUpload(agent, {
      method: 'POST',
      path: '/v1/files/upload?path=doc.txt',
      token: rw,
      chunks: patternChunks(2, 40, 16 * 1024),
    });
    expect(expectError(res, 'PAYLOAD_TOO_LARGE', 413)).toMatch(/larger than/);
    expectOldFileAndNoTemporaries();
  });

  it('accepts a body of exactly the limit', async () => {
    const res = await streamUpload(agent, {
      path: '/files/doc.txt',
      token: rw,
      chunks: patternChunks(3, 4, LIMIT / 4),
    });
    expect(res.status).toBe(200);
    expect(readFileSync(target).length).toBe(LIMIT);
  });
});

describe('aborted upload', () => {
  it('keeps the old file and removes the temporary file when the client disconnects mid-body', async () => {
    const req = openUpload(agent, { path: '/files/doc.txt', token: rw, chunks: [], contentLength: LIMIT });
    req.on('error', () => {});
    req.write(Buffer.alloc(64 * 1024, 7));
    await eventually(() => uploadTemporaries(agent.workspace).length === 1);
    req.destroy();
    await eventually(() => uploadTemporaries(agent.workspace).length === 0);
    expectOldFileAndNoTemporaries();
    const after = await send(agent, { method: 'GET', path: '/files/doc.txt', token: rw });
    expect(after.body.toString()).toBe(OLD);
  });
});

describe('concurrent uploads to one path', () => {
  it('ends with exactly one of the bodies, and readers never see a mix', async () => {
    const big = await startFilesAgent();
    try {
      const token = big.token(['fs:rw']);
      const file = path.join(big.workspace, 'shared.bin');
      writeFileSync(file, OLD);
      const bodyA = Buffer.concat([...patternChunks(10, 48, 64 * 1024)]);
      const bodyB = Buffer.concat([...patternChunks(100, 48, 64 * 1024)]);
      const allowed = new Set([sha256(Buffer.from(OLD)), sha256(bodyA), sha256(bodyB)]);
      const uploadsDone = new AbortController();
      const reader = (async () => {
        const seen: Array<{ status: number; digest: string; error?: string }> = [];
        while (!uploadsDone.signal.aborted) {
          const res = await send(big, { method: 'GET', path: '/files/shared.bin', token });
          seen.push({
            status: res.status,
            digest: sha256(res.body),
            ...(res.status === 200 ? {} : { error: res.body.toString() }),
          });
        }
        return seen;
      })();
      const uploads = await Promise.all([
        streamUpload(big, {
          path: '/files/shared.bin',
          token,
          chunks: patternChunks(10, 48, 64 * 1024),
          pauseMs: 2,
        }),
        streamUpload(big, {
          path: '/files/shared.bin',
          token,
          chunks: patternChunks(100, 48, 64 * 1024),
          pauseMs: 2,
        }),
      ]);
      uploadsDone.abort();
      expect(uploads.map((res) => res.status)).toEqual([200, 200]);
      const final = sha256(readFileSync(file));
      expect([sha256(bodyA), sha256(bodyB)]).toContain(final);
      const seen = await reader;
      expect(seen.length).toBeGreaterThan(0);
      // Every read succeeds (a file replaced while it is being opened is still the old file).
      expect(seen.filter((read) => read.status !== 200)).toEqual([]);
      for (const { digest } of seen) expect(allowed.has(digest)).toBe(true);
      expect(uploadTemporaries(big.workspace)).toEqual([]);
    } finally {
      await big.close();
    }
  });
});

describe('conditional writes', () => {
  it('writes with a matching If-Match and refuses a stale one with 412', async () => {
    const { headers } = await send(agent, { method: 'HEAD', path: '/files/doc.txt', token: rw });
    const etag = headers.etag ?? '';
    const first = await send(agent, {
      method: 'PUT',
      path: '/files/doc.txt',
      token: rw,
      headers: { 'if-match': etag },
      body: 'v2',
    });
    expect(first.status).toBe(200);
    const stale = await send(agent, {
      method: 'PUT',
      path: '/files/doc.txt',
      token: rw,
      headers: { 'if-match': etag },
      body: 'v3',
    });
    expect(expectError(stale, 'PRECONDITION_FAILED', 412)).toMatch(/changed/);
    expect(readFileSync(target, 'utf8')).toBe('v2');
    expect(uploadTemporaries(agent.workspace)).toEqual([]);
  });

  it('If-Match on a missing file fails; If-None-Match: * creates only', async () => {
    const missing = await send(agent, {
      method: 'PUT',
      path: '/files/new-1.txt',
      token: rw,
      headers: { 'if-match': '*' },
      body: 'x',
    });
    expectError(missing, 'PRECONDITION_FAILED', 412);
    const exists = await send(agent, {
      method: 'PUT',
      path: '/files/doc.txt',
      token: rw,
      headers: { 'if-none-match': '*' },
      body: 'x',
    });
    expectError(exists, 'PRECONDITION_FAILED', 412);
    expect(readFileSync(target, 'utf8')).toBe(OLD);
    const created = await send(agent, {
      method: 'PUT',
      path: '/files/new-2.txt',
      token: rw,
      headers: { 'if-none-match': '*' },
      body: 'x',
    });
    expect(created.status).toBe(201);
  });
});
