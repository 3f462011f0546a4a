// What a real agent will not do on request: echo the headers it got, answer with hop-by-hop
// fields, break off mid-answer, never answer, refuse an upgrade as overloaded, end a socket
// without a close code or drop it. A stand-in upstream does these; the relay in front of it
// is the same one the other tests use.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocketServer } from 'ws';
import { closedPort, lastOutcome, startRelayServer, type RelayServer } from './relay-harness.js';
import { once, openCaller } from './relay-ws-client.js';

const BROKER_TOKEN = 'broker-minted-capability';

/** What the stand-in saw of each request, by path. */
const seen = new Map<string, { headers: IncomingMessage['headers']; closedEarly: Promise<boolean> }>();

function standIn(req: IncomingMessage, res: ServerResponse): void {
  const closedEarly = new Promise<boolean>((resolve) =>
    req.on('close', () => resolve(!req.complete || !res.writableFinished)),
  );
  const path = new URL(req.url ?? '/', 'http://stand-in').pathname;
  seen.set(path, { headers: req.headers, closedEarly });
  switch (path) {
    case '/echo':
      res.setHeader('set-cookie', 'agent=1');
      res.setHeader('keep-alive', 'timeout=77');
      res.setHeader('connection', 'x-hop');
      res.setHeader('x-hop', 'only-for-this-connection');
      res.setHeader('x-agent', 'end-to-end');
      res.end(JSON.stringify(req.headers));
      return;
    case '/broken':
      res.writeHead(200, { 'content-length': '1000' });
      res.write('0123456789', () => res.destroy());
      return;
    case '/stream':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first chunk\n');
      return; // and nothing more: only the caller can end it
    case '/upload':
      req.resume(); // reads, never answers: the caller will give up
      return;
    default: // '/silent': never answers
  }
}

/** `upstream` listening on a free port, and a relay in front of it; `close` ends both. */
async function relayInFrontOf(upstream: Server): Promise<{ relay: RelayServer; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  const relay = await startRelayServer({
    httpBaseUrl: `http://127.0.0.1:${port}/`,
    wsBaseUrl: `ws://127.0.0.1:${port}`,
    token: BROKER_TOKEN,
  });
  return {
    relay,
    close: async () => {
      await relay.close();
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
    },
  };
}

describe('relay: failures and policies, against a stand-in upstream', () => {
  let relay: RelayServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const upstream = createServer(standIn);
    // An upgrade the stand-in refuses as overloaded, as a busy proxy in front of an agent would.
    upstream.on('upgrade', (_req, socket) =>
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n'),
    );
    ({ relay, close } = await relayInFrontOf(upstream));
  });

  afterAll(() => close());

  it("sends the broker's token, end-to-end headers only, and returns the answer's end-to-end headers", async () => {
    const response = await fetch(`${relay.httpUrl}/dp/echo?x=1`, {
      headers: {
        authorization: 'Bearer caller-api-key',
        cookie: 'broker_session=secret',
        'x-forwarded-for': '203.0.113.9',
        range: 'bytes=0-9',
        'if-none-match': '"abc"',
        'content-type': 'text/plain',
        'proxy-authorization': 'Basic eA==',
      },
    });
    const got = (await response.json()) as Record<string, string>;
    expect(got['authorization']).toBe(`Bearer ${BROKER_TOKEN}`);
    expect(got).toMatchObject({ range: 'bytes=0-9', 'if-none-match': '"abc"', 'content-type': 'text/plain' });
    for (const name of ['cookie', 'x-forwarded-for', 'proxy-authorization'])
      expect(got[name]).toBeUndefined();
    expect(got['x-request-id']).toBe(response.headers.get('x-request-id'));
    expect(response.headers.get('x-agent')).toBe('end-to-end');
    for (const name of ['set-cookie', 'x-hop']) expect(response.headers.get(name)).toBeNull();
    // The broker's server speaks for its own connection; the agent's keep-alive stays upstream.
    expect(response.headers.get('keep-alive')).not.toContain('77');
    expect(JSON.stringify([...response.headers])).not.toContain(BROKER_TOKEN);
  });

  it("destroys the caller's connection when the answer breaks off after its headers", async () => {
    const response = await fetch(`${relay.httpUrl}/dp/broken`);
    expect(response.status).toBe(200);
    await expect(response.arrayBuffer()).rejects.toThrow('terminated');
    expect(await lastOutcome(relay)).toMatchObject({ status: 200, bytesOut: 10, failure: 'upstream_broken' });
  });

  it('answers 504 in the error envelope when no answer comes within the headers timeout', async () => {
    relay.httpOptions = { headersTimeoutMs: 200 };
    try {
      const response = await fetch(`${relay.httpUrl}/dp/silent`);
      expect(response.status).toBe(504);
      expect(await response.json()).toMatchObject({ error: { code: 'TIMEOUT', retryable: true } });
      expect(await lastOutcome(relay)).toMatchObject({ status: 504, failure: 'timeout' });
    } finally {
      relay.httpOptions = {};
    }
  });

  it('aborts the upstream request when the caller leaves, mid-answer or mid-upload', async () => {
    const controller = new AbortController();
    const response = await fetch(`${relay.httpUrl}/dp/stream`, { signal: controller.signal });
    expect(response.status).toBe(200);
    controller.abort();
    expect(await lastOutcome(relay)).toMatchObject({ failure: 'client_gone' });
    expect(await seen.get('/stream')?.closedEarly).toBe(true);

    const uploading = new AbortController();
    // One chunk, then a body that never goes on: the caller is mid-upload when it leaves.
    const body = new ReadableStream<Uint8Array>({
      start: (stream) => stream.enqueue(new Uint8Array(64 * 1024)),
      pull: () => new Promise<void>(() => undefined),
    });
    const sent = fetch(`${relay.httpUrl}/dp/upload`, {
      method: 'POST',
      body,
      duplex: 'half',
      signal: uploading.signal,
    });
    await once<void>(
      (fire) => pollUntil(() => seen.has('/upload'), fire),
      'the upload to reach the stand-in',
    );
    uploading.abort();
    await expect(sent).rejects.toThrow('aborted');
    expect(await seen.get('/upload')?.closedEarly).toBe(true);
    expect(await lastOutcome(relay)).toMatchObject({ failure: 'client_gone', status: 0 });
  });

  it('closes the caller 1011 when the agent is unreachable, 1013 when it refuses as overloaded', async () => {
    const saved = relay.target;
    relay.target = { ...saved, wsBaseUrl: `ws://127.0.0.1:${await closedPort()}` };
    const unreachable = await openCaller(relay, '/v1/shell/ws');
    expect(await unreachable.closed).toEqual({ code: 1011, reason: 'the sandbox agent is unreachable' });
    expect(await lastOutcome(relay)).toMatchObject({ closedBy: 'relay', failure: 'unreachable' });

    relay.target = saved;
    const busy = await openCaller(relay, '/v1/shell/ws');
    expect(await busy.closed).toEqual({ code: 1013, reason: 'the sandbox agent is busy; try again later' });
    expect(await lastOutcome(relay)).toMatchObject({ closeCode: 1013, failure: 'overloaded' });
  });
});

/** Calls `fire` once `check` passes, looking again every 10 ms (`once` sets the ceiling). */
function pollUntil(check: () => boolean, fire: () => void): void {
  if (check()) fire();
  else setTimeout(() => pollUntil(check, fire), 10);
}

describe('relay: how an agent that ends a socket badly reaches the caller, against a stand-in', () => {
  let agents: WebSocketServer;
  let relay: RelayServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const upstream = createServer();
    agents = new WebSocketServer({ server: upstream });
    // After the broker's token: a close frame without a code (1005 at the relay), or the
    // connection dropped with no close frame at all (1006).
    agents.on('connection', (socket, req) =>
      socket.once('message', () => {
        if (req.url === '/no-code') socket.close();
        else socket.terminate();
      }),
    );
    ({ relay, close } = await relayInFrontOf(upstream));
  });

  afterAll(async () => {
    agents.close();
    await close();
  });

  it('closes the caller 1000 for a close without a code, 1011 for a dropped connection', async () => {
    const noCode = await openCaller(relay, '/no-code');
    expect((await noCode.closed).code).toBe(1000);
    expect(await lastOutcome(relay)).toMatchObject({
      closedBy: 'agent',
      agentCloseCode: 1005,
      closeCode: 1000,
    });
    const dropped = await openCaller(relay, '/dropped');
    expect((await dropped.closed).code).toBe(1011);
    expect(await lastOutcome(relay)).toMatchObject({
      closedBy: 'agent',
      agentCloseCode: 1006,
      closeCode: 1011,
    });
  });
});
