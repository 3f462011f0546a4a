import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallerEnvironments, type EnvironmentOptions } from './environments.js';
import { createSandboxMcpServer, type ServerHooks } from './server.js';

export interface HttpOptions extends Omit<EnvironmentOptions, 'bearer'>, ServerHooks {
  /** The endpoint's path; default `/mcp`. */
  readonly path?: string;
  /** How many callers' sessions are kept (least recently used dropped first); default 256. */
  readonly maxCallers?: number;
}

/** `Authorization: Bearer <credential>` of the request, if any. */
export function bearerOf(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

function jsonRpcError(res: ServerResponse, status: number, message: string, headers = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message }, id: null }));
}

/**
 * Each caller's environments, keyed by a hash of the caller's own credential: a request can
 * only ever reach sessions negotiated with the very credential it carries. A new OIDC access
 * token (after a refresh) therefore starts a new cache; `get` reattaches to the thread.
 */
class CallerCache {
  readonly #callers = new Map<string, CallerEnvironments>();
  constructor(private readonly options: HttpOptions) {}

  of(bearer: string): CallerEnvironments {
    const key = createHash('sha256').update(bearer).digest('base64url');
    let caller = this.#callers.get(key);
    if (caller !== undefined) this.#callers.delete(key);
    caller ??= new CallerEnvironments({ ...this.options, bearer: () => bearer });
    this.#callers.set(key, caller);
    for (const [oldest, evicted] of this.#callers) {
      if (this.#callers.size <= (this.options.maxCallers ?? 256)) break;
      this.#callers.delete(oldest);
      evicted.close();
    }
    return caller;
  }

  close(): void {
    for (const caller of this.#callers.values()) caller.close();
    this.#callers.clear();
  }
}

export type McpRequestHandler = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & {
  close(): void;
};

/**
 * A Node request handler serving the tools over Streamable HTTP, stateless: every POST is
 * answered by a server bound to that request's own bearer. No bearer: 401 with a JSON-RPC error.
 */
export function createMcpHttpHandler(options: HttpOptions): McpRequestHandler {
  const callers = new CallerCache(options);
  const endpoint = options.path ?? '/mcp';
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== endpoint) {
      return jsonRpcError(res, 404, `not found: the MCP endpoint is ${endpoint}`);
    }
    if (req.method !== 'POST') {
      return jsonRpcError(res, 405, 'method not allowed: this stateless server takes POST only', {
        allow: 'POST',
      });
    }
    const bearer = bearerOf(req);
    if (bearer === undefined) {
      return jsonRpcError(
        res,
        401,
        'UNAUTHENTICATED: send Authorization: Bearer <API key or OIDC access token>',
        {
          'www-authenticate': 'Bearer',
        },
      );
    }
    const server = createSandboxMcpServer(callers.of(bearer), options);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.once('close', () => {
      void transport.close().catch(() => undefined);
      void server.close().catch(() => undefined);
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (err) {
      options.onInternalError?.(err);
      if (!res.headersSent) jsonRpcError(res, 500, 'internal error');
      else res.end();
    }
  };
  return Object.assign(handle, { close: () => callers.close() });
}

export interface RunningHttp {
  readonly server: Server;
  /** `http://host:port/mcp`. */
  readonly url: string;
  close(): Promise<void>;
}

/** Listens on `host` (default 127.0.0.1) and `port` (default 0: any free port). */
export async function startMcpHttpServer(
  options: HttpOptions & { readonly host?: string; readonly port?: number },
): Promise<RunningHttp> {
  const handler = createMcpHttpHandler(options);
  const server = createServer((req, res) => void handler(req, res));
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the MCP server has no TCP address');
  const { port } = address;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shownHost}:${port}${options.path ?? '/mcp'}`,
    close: async () => {
      handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
