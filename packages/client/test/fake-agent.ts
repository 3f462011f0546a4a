// A scripted stand-in for the agent's WebSocket endpoints, for protocol misbehaviour a real
// agent never shows (a socket accepted and then dropped every time, an auth that never
// answers). It speaks just enough of the protocol: `auth` → `auth_ok`, then the script.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  SandboxClient,
  type Credential,
  type KeepAlive,
  type RetryPolicy,
  type TokenSource,
} from '../src/index.js';

export interface FakeConnection {
  readonly socket: WebSocket;
  /** When the client connected (ms since the epoch). */
  readonly at: number;
  /** Set once the socket closed, whoever closed it. */
  closed: boolean;
  /** `ping` frames the client sent on it (its keep-alive). */
  pings: number;
  send(frame: object): void;
}

export interface FakeAgentScript {
  /** Before `auth_ok`: a connection whose promise is pending waits for it (default: answers at once). */
  readonly beforeAuth?: (conn: FakeConnection, index: number) => Promise<void>;
  /** What the agent does with the `start` frame of connection `index` (0-based). */
  readonly onStart: (conn: FakeConnection, start: Record<string, unknown>, index: number) => void;
  /** Whether connection `index` leaves pings unanswered, like a dead peer (default: it answers, as an agent does). */
  readonly silent?: (index: number) => boolean;
}

export interface FakeAgent {
  readonly wsUrl: string;
  readonly connections: readonly FakeConnection[];
  close(): Promise<void>;
}

export async function startFakeAgent(script: FakeAgentScript): Promise<FakeAgent> {
  const server: Server = createServer();
  const wss = new WebSocketServer({ server });
  const connections: FakeConnection[] = [];
  wss.on('connection', (socket) => {
    const index = connections.length;
    const conn: FakeConnection = {
      socket,
      at: Date.now(),
      closed: false,
      pings: 0,
      send: (frame) => socket.send(JSON.stringify(frame)),
    };
    connections.push(conn);
    socket.on('close', () => (conn.closed = true));
    socket.on('message', (data) => {
      const text = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Uint8Array);
      const frame = JSON.parse(text.toString('utf8')) as Record<string, unknown>;
      if (frame['type'] === 'auth') {
        const wait = script.beforeAuth?.(conn, index) ?? Promise.resolve();
        void wait.then(() => conn.send({ type: 'auth_ok' }));
      } else if (frame['type'] === 'start') script.onStart(conn, frame, index);
      else if (frame['type'] === 'ping') {
        conn.pings++;
        if (script.silent?.(index) !== true) conn.send({ type: 'pong', id: frame['id'] });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    wsUrl: `ws://127.0.0.1:${port}`,
    connections,
    async close() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One token, never refreshed (the fake agent accepts any). */
export function fixedTokens(
  credential: Credential = { token: 'fake-token', expiresAt: new Date(Date.now() + 3_600_000) },
): TokenSource {
  return {
    current: () => credential,
    refresh: () => Promise.resolve(credential),
    fresh: () => Promise.resolve(credential.token),
    onRefresh: () => () => undefined,
  };
}

/** A client of the fake agent (HTTP is not served: only sockets are). */
export function fakeAgentClient(agent: FakeAgent, retry: RetryPolicy, keepAlive?: KeepAlive): SandboxClient {
  return new SandboxClient({
    httpBaseUrl: 'http://127.0.0.1:9',
    wsBaseUrl: agent.wsUrl,
    tokens: fixedTokens(),
    retry,
    timeoutMs: 10_000,
    ...(keepAlive === undefined ? {} : { keepAlive }),
  });
}
