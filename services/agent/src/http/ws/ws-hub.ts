import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_FRAME_BYTES, type WsEndpoint } from '@sbx/protocol';
import { originAllowed, type Logger } from '@sbx/service-kit';
import type { Authenticator } from '../authenticator.js';
import type { AgentMetrics } from '../../domain/metrics/agent-metrics.js';
import { SocketBytes } from './socket-bytes.js';
import { WsConnection } from './ws-connection.js';
import type { WsRoute } from './ws-session.js';

export interface WsHubOptions {
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  readonly now: () => number;
  readonly authTimeoutMs: number;
  readonly maxFrameBytes?: number;
  /** A peer that answers no ping for this long is dropped (its shells live on for reattach). */
  readonly keepAliveMs?: number;
  /** Sockets still awaiting `auth` (or their handshake) past which new ones close 1013 (default 256). */
  readonly maxUnauthenticated?: number;
  /** Browser origins allowed to upgrade; a request with any other Origin gets 403 (none: no browser). */
  readonly allowedOrigins?: readonly string[];
  /** WebSocket traffic counts into the agent's bytes moved, like HTTP exchanges. */
  readonly metrics?: Pick<AgentMetrics, 'bytesMoved'> | undefined;
}

export interface WsHub {
  readonly connectionCount: number;
  /** Closes every socket (1001 going away) and stops accepting upgrades. */
  close(): void;
}

/** RFC 6455 1001: the server is going away. */
const GOING_AWAY = 1001;
/** RFC 6455 1013: try again later (docs/protocol.md, "Close codes"). */
const TRY_AGAIN_LATER = 1013;
export const DEFAULT_MAX_UNAUTHENTICATED = 256;

function rejectUpgrade(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** Serves the WebSocket routes on `server`: one upgrade handler, routes matched by exact path. */
export function attachWebSockets(server: Server, routes: readonly WsRoute[], options: WsHubOptions): WsHub {
  const byPath = new Map<string, WsRoute>();
  for (const route of routes) for (const path of route.paths) byPath.set(path, route);
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxFrameBytes ?? MAX_FRAME_BYTES });
  const live = new Set<WsConnection<WsEndpoint>>();
  const counted = new Map<WsConnection<WsEndpoint>, SocketBytes>();
  const maxUnauthenticated = options.maxUnauthenticated ?? DEFAULT_MAX_UNAUTHENTICATED;
  let handshaking = 0;
  let refusedInBurst = false;
  const unauthenticated = (): number => {
    let count = handshaking;
    for (const connection of live) if (connection.awaitingAuth) count++;
    return count;
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://agent.invalid');
    const route = byPath.get(url.pathname);
    if (route === undefined) {
      rejectUpgrade(socket, 404, 'Not Found');
      return;
    }
    // Browsers always send Origin; other clients need not, and cannot be tricked into sending one.
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, options.allowedOrigins ?? [])) {
      rejectUpgrade(socket, 403, 'Forbidden');
      return;
    }
    const full = unauthenticated() >= maxUnauthenticated;
    // Counted until the handshake ends either way (a refused handshake never calls back).
    handshaking++;
    let handshakeDone = false;
    const endHandshake = (): void => {
      if (!handshakeDone) handshaking--;
      handshakeDone = true;
    };
    socket.once('close', endHandshake);
    wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      endHandshake();
      if (full) {
        ws.on('error', () => ws.terminate());
        ws.close(TRY_AGAIN_LATER, 'too many unauthenticated connections');
        // One line per burst, not per refused socket.
        if (!refusedInBurst)
          options.logger.warn({ limit: maxUnauthenticated }, 'unauthenticated WebSocket cap reached');
        refusedInBurst = true;
        return;
      }
      refusedInBurst = false;
      const connection = new WsConnection(ws, route, url, options, socket);
      live.add(connection);
      const bytes = new SocketBytes(socket, options.metrics);
      counted.set(connection, bytes);
      ws.once('close', () => {
        live.delete(connection);
        counted.delete(connection);
        bytes.report();
      });
      connection.start();
    });
  });

  // A revocation (or a rotation for a leak) re-checks every open socket's token at once.
  const unsubscribe = options.authenticator.onRevocation?.(() => {
    for (const connection of live) connection.recheck();
  });

  const keepAlive = setInterval(() => {
    for (const connection of live) connection.checkAlive();
    // A shell may stay open for hours: its bytes count as they go, not only at its end.
    for (const bytes of counted.values()) bytes.report();
  }, options.keepAliveMs ?? 30_000);
  keepAlive.unref();

  return {
    get connectionCount() {
      return live.size;
    },
    close() {
      clearInterval(keepAlive);
      unsubscribe?.();
      for (const connection of live) connection.close(GOING_AWAY, 'agent shutting down');
      // A peer that never answers the close handshake must not hold the shutdown hostage.
      const stragglers = setTimeout(() => {
        for (const connection of live) connection.socket.terminate();
      }, 500);
      stragglers.unref();
      wss.close();
    },
  };
}
