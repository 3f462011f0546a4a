// The route's role in the relay tests: a tiny HTTP server that relays `/dp/<agent path>` and
// WebSockets on `/ws/<agent path>` (after consuming the caller's own first message) to one
// sandbox's agent, started by the real local provider (isolation none).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  holdFrames,
  relayHttp,
  relayWebSocket,
  type RelayHttpOptions,
  type RelayOutcome,
  type RelayTarget,
  type RelayWsOptions,
} from '../../src/relay/index.js';
import type { Dataplane, SandboxSpec } from '../../src/providers/provider.js';
import { contractSpec } from '../providers/provider-contract.js';
import { tokenFor, type LocalKit } from '../providers/local-provider-kit.js';

/** What the test's caller sends as its own credential: never valid on an agent. */
export const CALLER_CREDENTIAL = 'caller-credential-not-a-capability';

export interface Sandbox {
  readonly spec: SandboxSpec;
  readonly dataplane: Dataplane;
  /** A relay target with a fresh token of `scopes` for this sandbox. */
  target(scopes: string[]): RelayTarget;
}

export async function startSandbox(kit: LocalKit): Promise<Sandbox> {
  const spec = contractSpec();
  const { dataplane } = await kit.provider.create(spec);
  return {
    spec,
    dataplane,
    target: (scopes) => ({
      httpBaseUrl: dataplane.httpBaseUrl,
      wsBaseUrl: dataplane.wsBaseUrl,
      token: tokenFor(spec, scopes),
    }),
  };
}

export interface RelayServer {
  readonly httpUrl: string;
  readonly wsUrl: string;
  /** Where the next relayed call goes; the test sets it before each call. */
  target: RelayTarget;
  httpOptions: RelayHttpOptions;
  wsOptions: RelayWsOptions;
  /** One promise per relayed call, in arrival order. */
  readonly calls: Promise<RelayOutcome>[];
  close(): Promise<void>;
}

function relayRequest(server: RelayServer, req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  if (!url.startsWith('/dp/')) {
    res.writeHead(404).end();
    return;
  }
  // As the broker's assignRequestId does before any route runs.
  res.setHeader('X-Request-Id', `req_${randomUUID()}`);
  server.calls.push(relayHttp(req, res, server.target, url.slice('/dp'.length), server.httpOptions));
}

/**
 * The route's first-message check, asynchronous as a real one is (a credential lookup): the
 * messages the caller sent right behind its credential are held meanwhile and relayed first.
 */
function relaySocket(server: RelayServer, client: WebSocket, url: string): void {
  client.once('message', (data: Buffer) => {
    const held = holdFrames(client);
    const first = JSON.parse(data.toString('utf8')) as { type?: string; token?: string };
    if (first.type !== 'auth' || first.token !== CALLER_CREDENTIAL) {
      client.close(1008, 'caller not authenticated');
      return;
    }
    const relayed = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      relayWebSocket(client, server.target, url.slice('/ws'.length), {
        ...server.wsOptions,
        pending: held.take(),
      }),
    );
    server.calls.push(relayed);
  });
}

export async function startRelayServer(target: RelayTarget): Promise<RelayServer> {
  const http: Server = createServer((req, res) => relayRequest(server, req, res));
  const wss = new WebSocketServer({ server: http });
  wss.on('connection', (client, req) => relaySocket(server, client, req.url ?? '/'));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const server: RelayServer = {
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    target,
    httpOptions: {},
    wsOptions: {},
    calls: [],
    async close() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  return server;
}

/** The last relayed call's outcome, once it has ended. */
export async function lastOutcome(server: RelayServer): Promise<RelayOutcome> {
  const call = server.calls.at(-1);
  if (call === undefined) throw new Error('nothing was relayed');
  return call;
}

/** A port nothing listens on: bound, then released. */
export async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
