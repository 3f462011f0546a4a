// The relayed command reads its own JSON body (readJsonBody, not express.json: bench/relay):
// through a real broker and a real agent, a body that is not JSON, too large, compressed or
// of another type gets the protocol's envelope, and the kept-alive connection it came on
// still carries the next command; a good command's answer is the agent's own JSON.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { SandboxResource } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly reusedSocket: boolean;
}

describe(`relayed command bodies [${backend.name}]`, () => {
  const broker = useLocalBroker(backend, { isolation: 'none' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let key: string;
  let path: string;

  beforeAll(async () => {
    key = await broker.apiKey({
      scopes: ['write:sandbox', 'exec:sandbox'],
      principalId: `usr_${randomUUID()}`,
      principalType: 'user',
    });
    const created = await request(broker.url).post('/v1/sandboxes').set(bearer(key)).send({ name: 'bodies' });
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
    path = `/v1/sandboxes/${SandboxResource.parse(created.body).id}/commands`;
  }, 120_000);
  afterAll(() => agent.destroy());

  /** One POST on the test's single kept-alive connection; `chunks` are written as they are. */
  function post(headers: Record<string, string>, chunks: readonly Buffer[]): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        `${broker.url}${path}`,
        { method: 'POST', agent, headers: { authorization: `Bearer ${key}`, ...headers } },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (chunk: Buffer) => parts.push(chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(parts).toString('utf8'),
              reusedSocket: req.reusedSocket,
            }),
          );
        },
      );
      req.on('error', reject);
      for (const chunk of chunks) req.write(chunk);
      req.end();
    });
  }
  const json = (value: unknown) => [Buffer.from(JSON.stringify(value))];
  const JSON_TYPE = { 'content-type': 'application/json' };
  const errorOf = (reply: Reply) =>
    (JSON.parse(reply.body) as { error: { code: string; message: string } }).error;

  it('answers with the agent’s JSON as it came, with the request id and security headers', async () => {
    const reply = await post(JSON_TYPE, json({ argv: ['printf', 'é ✓'] }));
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(reply.headers['content-length']).toBe(String(Buffer.byteLength(reply.body)));
    expect(reply.headers['x-request-id']).toMatch(/^req_/);
    expect(reply.headers['x-content-type-options']).toBe('nosniff');
    expect(JSON.parse(reply.body)).toMatchObject({ exit_code: 0, stdout: 'é ✓' });
  });

  it('refuses a body that is not JSON, and the connection carries the next command', async () => {
    const broken = await post(JSON_TYPE, [Buffer.from('{"cmd": "true"')]);
    expect(broken.status).toBe(400);
    expect(errorOf(broken)).toMatchObject({ code: 'BAD_REQUEST', message: 'request body is not valid JSON' });
    const scalar = await post(JSON_TYPE, [Buffer.from('"true"')]);
    expect(errorOf(scalar).code).toBe('BAD_REQUEST');
    // An empty JSON body is an empty object, which names what it lacks.
    const empty = await post(JSON_TYPE, []);
    expect(empty.status).toBe(400);
    expect(errorOf(empty).message).toContain('one of argv or cmd is required');
    const next = await post(JSON_TYPE, json({ cmd: 'true' }));
    expect(next.status).toBe(200);
    expect(next.reusedSocket).toBe(true);
  });

  it('refuses a body over 256 KiB, declared or streamed, and the connection carries the next command', async () => {
    const big = Buffer.from(JSON.stringify({ cmd: 'true', env: { PAD: 'x'.repeat(300 * 1024) } }));
    const declared = await post(JSON_TYPE, [big]);
    expect(declared.status).toBe(413);
    expect(errorOf(declared).code).toBe('PAYLOAD_TOO_LARGE');
    // Chunked: no length to refuse up front, so the limit is met while reading.
    const pieces = Array.from({ length: 10 }, (_, i) => big.subarray(i * 40_000, (i + 1) * 40_000));
    const streamed = await post({ ...JSON_TYPE, 'transfer-encoding': 'chunked' }, pieces);
    expect(streamed.status).toBe(413);
    expect(errorOf(streamed).code).toBe('PAYLOAD_TOO_LARGE');
    const next = await post(JSON_TYPE, json({ cmd: 'true' }));
    expect(next.status).toBe(200);
  });

  it('names what it cannot read: another content type, a compressed body, another charset', async () => {
    const text = await post({ 'content-type': 'text/plain' }, json({ cmd: 'true' }));
    expect(text.status).toBe(415);
    expect(errorOf(text)).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
    expect(errorOf(text).message).toContain('send Content-Type: application/json');
    const untyped = await post({}, json({ cmd: 'true' }));
    expect(untyped.status).toBe(415);
    expect(untyped.reusedSocket).toBe(true); // the refused body was read off
    const gzip = await post({ ...JSON_TYPE, 'content-encoding': 'gzip' }, [
      gzipSync(json({ cmd: 'true' })[0]!),
    ]);
    expect(gzip.status).toBe(400);
    expect(errorOf(gzip).message).toContain('Content-Encoding gzip');
    const latin = await post({ 'content-type': 'application/json; charset=latin1' }, json({ cmd: 'true' }));
    expect(latin.status).toBe(400);
    expect(errorOf(latin).message).toContain('charset latin1');
  });
});
