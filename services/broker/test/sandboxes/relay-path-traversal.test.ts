// Relay mode checks a call's caller scope on the very path it forwards (docs/sandboxes.md
// "Relay mode"): dot segments are resolved before the scope table is asked, and a path
// hiding one behind percent-encoding (`%2e`, `%252e`, `%2f`, `%5c` …) is refused 400
// before anything reaches the agent, HTTP and WebSocket upgrades alike. A real broker
// (FAKE provider: no agent process) whose sandbox row points at a stand-in agent on port 0
// that records every path it is asked for.
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket, WebSocketServer } from 'ws';
import { ErrorEnvelope, ThreadSandboxResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { until } from '../support/until.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

interface RawAnswer {
  readonly status: number;
  readonly body: string;
}

/** One request exactly as written: fetch, ws and supertest would resolve its dot segments first. */
function raw(url: string, method: string, path: string, headers: Record<string, string>): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '' });
    });
    req.on('error', reject);
    req.end();
  });
}

const UPGRADE = {
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': Buffer.from(randomUUID().slice(0, 16)).toString('base64'),
};

/** Encoded dot segments, separators and backslashes, single and double encoded. */
const ENCODED = [
  '/files/%2e%2e/%2e%2e/etc/passwd',
  '/files/%2E%2E/%2E%2E/etc/passwd',
  '/files/.%2e/.%2E/etc/passwd',
  '/files/%2e./etc/passwd',
  '/files/%252e%252e/%252e%252e/etc/passwd',
  '/files/%25252e%25252e/etc/passwd',
  '/files/..%2f..%2fetc%2fpasswd',
  '/files/..%2F..%2Fetc%2Fpasswd',
  '/files/..%5c..%5cetc%5cpasswd',
  '/files/..%255c..%255cetc%255cpasswd',
  '/files/..%252f..%252fetc%252fpasswd',
  '/v1/files/%2e%2e/%2e%2e/v1/exec',
];

describe(`relay mode: the path checked is the path forwarded [${backend.name}]`, () => {
  const broker = useBroker(backend, { dataplaneRelay: true });
  /** What the stand-in agent was asked, `METHOD path` (`WS path` for an upgrade), in order. */
  const seen: string[] = [];
  let agent: Server;
  let sandboxId: string;
  let readWrite: string;
  let attach: string;

  beforeAll(async () => {
    agent = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      res.setHeader('content-type', 'application/json');
      res.end('{"agent":true}');
    });
    const sockets = new WebSocketServer({ server: agent });
    sockets.on('connection', (socket, req) => {
      seen.push(`WS ${req.url}`);
      socket.close(1000);
    });
    await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
    const { port } = agent.address() as AddressInfo;

    const owner = `principal_${randomUUID()}`;
    const ownerKey = (scopes: string[]) =>
      broker.apiKey({ scopes, principalType: 'user', principalId: owner });
    readWrite = await ownerKey(['read:sandbox', 'write:sandbox']);
    attach = await ownerKey(['attach:sandbox']);
    const opened = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(readWrite))
      .send({ scopes: ['fs:rw'] });
    if (opened.status !== 200) throw new Error(`negotiation answered ${opened.status}`);
    sandboxId = ThreadSandboxResponse.parse(opened.body).sandbox_id;
    await broker.database.prisma.sandbox.update({
      where: { id: sandboxId },
      data: { httpBaseUrl: `http://127.0.0.1:${port}`, wsBaseUrl: `ws://127.0.0.1:${port}` },
    });
  });

  afterAll(async () => {
    agent.closeAllConnections();
    await new Promise((resolve) => agent.close(resolve));
  });

  const dp = (path: string) => `/v1/sandboxes/${sandboxId}/dp${path}`;
  const call = (method: string, path: string, key = readWrite) =>
    raw(broker.url, method, dp(path), { authorization: `Bearer ${key}` });
  /** `[status, error.code]`, or `[status, body]` for an answer that is no error envelope (the agent's). */
  const refusal = (answer: RawAnswer) => {
    const envelope = ErrorEnvelope.safeParse(answer.body === '' ? undefined : JSON.parse(answer.body));
    return [answer.status, envelope.success ? envelope.data.error.code : answer.body];
  };

  /** A call the agent must get, as `METHOD path`; once it arrived, every earlier call has too. */
  async function reaches(method: string, path: string): Promise<void> {
    const answer = await call(method, path);
    expect(answer.status).toBe(200);
    await until(() => seen.includes(`${method} ${path}`), `the stand-in agent to get ${method} ${path}`);
  }

  it('forwards a plain path as it is, query included', async () => {
    await reaches('GET', '/files/notes/a.txt');
    // The query is the agent's to decode: only the path is the relay's.
    await reaches('GET', '/v1/files/download?path=notes%2F%2e%2e%2Fa.txt');
    expect(seen).toEqual(['GET /files/notes/a.txt', 'GET /v1/files/download?path=notes%2F%2e%2e%2Fa.txt']);
    seen.length = 0;
  });

  it('refuses encoded dot segments, slashes and backslashes with 400 before forwarding, on HTTP routes', async () => {
    for (const path of ENCODED) {
      for (const method of ['GET', 'POST']) {
        expect([path, method, ...refusal(await call(method, path))]).toEqual([
          path,
          method,
          400,
          'BAD_REQUEST',
        ]);
      }
    }
    // The same caller's plain call still goes through, and is the only thing the agent got.
    await reaches('GET', '/files/ok.txt');
    expect(seen).toEqual(['GET /files/ok.txt']);
    seen.length = 0;
  });

  it('checks the scope of the path dot segments resolve to, and forwards only that path', async () => {
    // Checked as a file read or write, this was relayed as `GET /etc/passwd` and `POST /v1/exec`.
    expect(refusal(await call('GET', '/files/../../etc/passwd'))).toEqual([404, 'NOT_FOUND']);
    expect(refusal(await call('POST', '/v1/files/../exec'))).toEqual([403, 'FORBIDDEN']);
    expect(refusal(await call('GET', '/files/./../v1/processes'))).toEqual([403, 'FORBIDDEN']);
    // A resolved path within the caller's scopes is forwarded resolved, never as written.
    expect((await call('GET', '/files/notes/../b.txt')).status).toBe(200);
    await reaches('GET', '/files/c.txt');
    expect(seen).toEqual(['GET /files/b.txt', 'GET /files/c.txt']);
    seen.length = 0;
  });

  it('refuses encoded dot segments, slashes and backslashes with 400 before a WebSocket upgrade', async () => {
    for (const path of [...ENCODED, '/v1/%2e%2e/v1/shell/ws', '/%2e%2e/%2e%2e/other/dp/v1/shell/ws']) {
      const answer = await raw(broker.url, 'GET', dp(path), UPGRADE);
      expect([path, ...refusal(answer)]).toEqual([path, 400, 'BAD_REQUEST']);
    }
    // A plain socket path is relayed: the stand-in's upgrade is all the agent got.
    const socket = new WebSocket(`${broker.url.replace('http', 'ws')}${dp('/v1/shell/ws')}`);
    const closed = new Promise<number>((resolve) => socket.once('close', (code: number) => resolve(code)));
    socket.once('open', () => socket.send(JSON.stringify({ type: 'auth', token: attach })));
    expect(await closed).toBe(1000);
    expect(seen).toEqual(['WS /v1/shell/ws']);
    seen.length = 0;
  });
});
