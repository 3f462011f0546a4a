import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestAgent } from '../support/agent-harness.js';
import { expectError, send, startFilesAgent, type RawResponse } from './files-test-kit.js';

let agent: TestAgent;
let ro: string;
const content = randomBytes(2 * 1024 * 1024 + 123);

beforeAll(async () => {
  agent = await startFilesAgent();
  ro = agent.token(['fs:ro']);
  writeFileSync(path.join(agent.workspace, 'big.bin'), content);
  writeFileSync(path.join(agent.workspace, 'empty.bin'), '');
});
afterAll(async () => {
  await agent.close();
});

function get(file: string, headers: Record<string, string>): Promise<RawResponse> {
  return send(agent, { method: 'GET', path: `/files/${file}`, token: ro, headers });
}

describe('Range requests', () => {
  it.each([
    ['bytes=0-9', 0, 9],
    ['bytes=1048576-1048600', 1048576, 1048600],
    ['bytes=2097000-', 2097000, content.length - 1],
    ['bytes=-100', content.length - 100, content.length - 1],
    [`bytes=10-${content.length + 5000}`, 10, content.length - 1],
  ])('%s → 206 with exactly those bytes', async (range, start, end) => {
    const res = await get('big.bin', { range });
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/${content.length}`);
    expect(res.headers['content-length']).toBe(String(end - start + 1));
    expect(res.body.equals(content.subarray(start, end + 1))).toBe(true);
  });

  it('answers 416 with Content-Range */size for a range past the end', async () => {
    const res = await get('big.bin', { range: `bytes=${content.length}-` });
    expectError(res, 'RANGE_NOT_SATISFIABLE', 416);
    expect(res.headers['content-range']).toBe(`bytes */${content.length}`);
    expectError(await get('empty.bin', { range: 'bytes=0-' }), 'RANGE_NOT_SATISFIABLE', 416);
  });

  it('serves the whole file for a range it does not serve (several ranges, garbage, stale If-Range)', async () => {
    const ignored: Record<string, string>[] = [
      { range: 'bytes=0-1,5-6' },
      { range: 'lines=1-2' },
      { range: 'bytes=0-9', 'if-range': '"stale"' },
    ];
    for (const headers of ignored) {
      const res = await get('big.bin', headers);
      expect(res.status).toBe(200);
      expect(res.body.length).toBe(content.length);
    }
  });

  it('honours If-Range with the current ETag, and If-None-Match with 304', async () => {
    const { headers } = await send(agent, { method: 'HEAD', path: '/files/big.bin', token: ro });
    const etag = headers.etag ?? '';
    expect((await get('big.bin', { range: 'bytes=0-3', 'if-range': etag })).status).toBe(206);
    const notModified = await get('big.bin', { 'if-none-match': etag });
    expect(notModified.status).toBe(304);
    expect(notModified.body.length).toBe(0);
    expect((await get('big.bin', { 'if-none-match': '"other"' })).status).toBe(200);
  });

  it('serves ranges through the normalized download route too', async () => {
    const res = await send(agent, {
      method: 'GET',
      path: '/v1/files/download?path=big.bin',
      token: ro,
      headers: { range: 'bytes=5-7' },
    });
    expect(res.status).toBe(206);
    expect(res.body.equals(content.subarray(5, 8))).toBe(true);
  });
});
