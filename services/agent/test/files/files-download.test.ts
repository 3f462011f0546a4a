import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import type { TestAgent } from '../support/agent-harness.js';
import { send, sha256, startFilesAgent } from './files-test-kit.js';

let agent: TestAgent;
let ro: string;
const MiB = 1024 * 1024;
const files = { 'one.bin': randomBytes(5 * MiB + 3), 'two.bin': randomBytes(4 * MiB + 1) };

beforeAll(async () => {
  agent = await startFilesAgent();
  ro = agent.token(['fs:ro']);
  for (const [name, content] of Object.entries(files))
    writeFileSync(path.join(agent.workspace, name), content);
});
afterAll(async () => {
  await agent.close();
});

/** Starts a download, reads its first bytes, then drops the connection; resolves once it is gone. */
function abandonDownload(file: string): Promise<void> {
  const url = new URL(agent.httpUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `/files/${file}`,
        headers: { authorization: `Bearer ${ro}` },
      },
      (res) => {
        res.once('data', () => req.destroy());
        res.once('close', resolve);
      },
    );
    req.on('error', () => undefined);
    req.on('close', resolve);
    req.end();
    req.once('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`download answered ${res.statusCode}`));
    });
  });
}

describe('downloads', () => {
  it('serve several large files at once, each byte for byte', async () => {
    const names = ['one.bin', 'two.bin', 'one.bin', 'two.bin'] as const;
    const got = await Promise.all(
      names.map((name) => send(agent, { method: 'GET', path: `/files/${name}`, token: ro })),
    );
    got.forEach((res, i) => {
      const expected = files[names[i]!];
      expect(res.status).toBe(200);
      expect(res.body.length).toBe(expected.length);
      expect(sha256(res.body)).toBe(sha256(expected));
    });
  });

  it('go on intact after a client left in the middle of one', async () => {
    await abandonDownload('one.bin');
    await abandonDownload('two.bin');
    const [one, two] = await Promise.all([
      send(agent, { method: 'GET', path: '/files/one.bin', token: ro }),
      send(agent, { method: 'GET', path: '/files/two.bin', token: ro }),
    ]);
    expect(sha256(one.body)).toBe(sha256(files['one.bin']));
    expect(sha256(two.body)).toBe(sha256(files['two.bin']));
  });

  it('count the bytes sent in the usage report', async () => {
    const before = await usageOut();
    await send(agent, { method: 'GET', path: '/files/two.bin', token: ro });
    await send(agent, {
      method: 'GET',
      path: '/files/one.bin',
      token: ro,
      headers: { range: 'bytes=10-1048585' },
    });
    expect((await usageOut()) - before).toBe(files['two.bin'].length + 1048576);
  });
});

async function usageOut(): Promise<number> {
  const res = await send(agent, { method: 'GET', path: '/healthz', token: agent.token(['fs:ro']) });
  return (JSON.parse(res.body.toString('utf8')) as { usage: { file_bytes_out: number } }).usage
    .file_bytes_out;
}
