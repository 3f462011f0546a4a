import { serveStdio, startMcpHttpServer, type BearerProvider } from '@sbx/mcp/serve';
import { SbxError } from '@sbx/protocol';
import { CLI_RETRY, loggedIn, parseCommand, type CliContext } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { deviceLoginBearer } from '../oauth/stored-login.js';
import { isDeviceLogin } from '../store.js';

/**
 * `sbx mcp`: the MCP server (packages/mcp) over stdio, acting with this CLI's login: the
 * API key, or the device login's OIDC access token, refreshed as `sbx` refreshes it. An
 * MCP host starts it as `{"command": "sbx", "args": ["mcp"]}` (docs/mcp.md).
 *
 * `sbx mcp --http <port> [--host h]`: Streamable HTTP at `/mcp` instead. Only the broker
 * URL comes from the login: every request acts with its own `Authorization: Bearer`.
 */
export async function mcp(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('mcp', args, { http: { type: 'string' }, host: { type: 'string' } });
  if (values.http !== undefined) return serveHttp(ctx, values.http, values.host);
  if (values.host !== undefined) throw new UsageError('mcp: --host goes with --http <port> (sbx help)');
  const { config } = loggedIn(ctx);
  const bearer: BearerProvider = isDeviceLogin(config) ? deviceLoginBearer(ctx.store) : () => config.api_key;
  const running = await serveStdio({
    brokerUrl: config.broker_url,
    bearer,
    actor: { type: 'agent', id: `${config.actor_id}.mcp` },
    retry: CLI_RETRY,
    stdin: ctx.stdin,
    stdout: ctx.stdout,
  });
  await running.closed;
  return EXIT.ok;
}

async function serveHttp(ctx: CliContext, portText: string, host: string | undefined): Promise<number> {
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new UsageError(`mcp: --http takes a port number, not "${portText}" (sbx help)`);
  }
  const brokerUrl = ctx.env.brokerUrl ?? ctx.store.readConfig()?.broker_url;
  if (brokerUrl === undefined) {
    throw new SbxError('UNAUTHENTICATED', 'no broker: run sbx login --broker <url> … or set SBX_BROKER_URL');
  }
  const running = await startMcpHttpServer({ brokerUrl, port, ...(host === undefined ? {} : { host }) });
  ctx.stderr.write(`sbx mcp: Streamable HTTP at ${running.url} (each request's own bearer)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await running.close();
  return EXIT.ok;
}
