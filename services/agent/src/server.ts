import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { applyServerLimits, DEFAULT_SERVER_LIMITS, MAX_HEADER_BYTES } from '@sbx/service-kit';
import type { AgentContext, AgentFeature } from './agent-context.js';
import { createAgentApp } from './http/app.js';
import { attachWebSockets, type WsHub } from './http/ws/ws-hub.js';

export interface AgentServerOptions {
  readonly host: string;
  readonly port: number;
  readonly wsAuthTimeoutMs: number;
  /** Default 256 (ws-hub.ts). */
  readonly wsMaxUnauthenticated?: number;
  /** Browser origins allowed CORS and WebSocket upgrades (default none). */
  readonly allowedOrigins?: readonly string[];
  /** 0 or absent: no Strict-Transport-Security. */
  readonly hstsMaxAgeSeconds?: number;
}

/** Uploads may be large: a whole request may take an hour; its head must still come within 20 s. */
const AGENT_SERVER_LIMITS = { ...DEFAULT_SERVER_LIMITS, requestTimeoutMs: 3_600_000 };

export interface RunningAgent {
  readonly server: Server;
  readonly hub: WsHub;
  /** e.g. `http://127.0.0.1:41234` */
  readonly httpUrl: string;
  /** e.g. `ws://127.0.0.1:41234` */
  readonly wsUrl: string;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

function urlHost(address: AddressInfo): string {
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return host.includes(':') ? `[${host}]` : host;
}

/** Starts HTTP and WebSockets on one port; `close` stops features first, then the sockets. */
export async function startAgentServer(
  ctx: AgentContext,
  features: readonly AgentFeature[],
  options: AgentServerOptions,
): Promise<RunningAgent> {
  const app = createAgentApp(ctx, features, ctx.now(), {
    allowedOrigins: options.allowedOrigins ?? [],
    hstsMaxAgeSeconds: options.hstsMaxAgeSeconds,
  });
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, app);
  applyServerLimits(server, AGENT_SERVER_LIMITS);
  const routes = features.flatMap((feature) => feature.wsRoutes ?? []);
  const hub = attachWebSockets(server, routes, {
    authenticator: ctx.authenticator,
    logger: ctx.logger,
    now: ctx.now,
    authTimeoutMs: options.wsAuthTimeoutMs,
    maxUnauthenticated: options.wsMaxUnauthenticated,
    metrics: ctx.metrics,
    allowedOrigins: options.allowedOrigins ?? [],
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string')
    throw new Error('agent server is not listening on TCP');
  const base = `${urlHost(address)}:${address.port}`;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const closers = features.flatMap((feature) => (feature.close === undefined ? [] : [feature.close()]));
      await Promise.allSettled(closers);
      hub.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    })();
    return closing;
  };
  return {
    server,
    hub,
    httpUrl: `http://${base}`,
    wsUrl: `ws://${base}`,
    close,
    [Symbol.asyncDispose]: close,
  };
}
