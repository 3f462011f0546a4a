import type { Readable, Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { registerCodeTools } from './code-tools.js';
import { registerEnvironmentTools } from './environment-tools.js';
import { CallerEnvironments, type EnvironmentOptions } from './environments.js';
import { registerSandboxTools } from './sandbox-tools.js';

import { SERVER_INFO, SERVER_INSTRUCTIONS } from './server-info.js';

export { SERVER_INFO } from './server-info.js';

/** The nine tools, in the order they are registered (docs/mcp.md#tools). */
export const TOOL_NAMES = [
  'environment_acquire',
  'environment_refresh',
  'environment_heartbeat',
  'environment_release',
  'read_file',
  'write_file',
  'list_files',
  'run_command',
  'execute_code',
] as const;

export interface ServerHooks {
  /** An unexpected (non-platform) error inside a tool; it is answered as INTERNAL. Default: stderr. */
  readonly onInternalError?: (err: unknown) => void;
}

const logInternal = (err: unknown): void => {
  process.stderr.write(
    `sbx-mcp: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
};

/** An MCP server whose tools act for the one caller that `environments` belongs to. */
export function createSandboxMcpServer(environments: CallerEnvironments, hooks: ServerHooks = {}): McpServer {
  const server = new McpServer(SERVER_INFO, { instructions: SERVER_INSTRUCTIONS });
  const onInternal = hooks.onInternalError ?? logInternal;
  registerEnvironmentTools(server, environments, onInternal);
  registerSandboxTools(server, environments, onInternal);
  registerCodeTools(server, environments, onInternal);
  return server;
}

export interface StdioOptions extends EnvironmentOptions, ServerHooks {
  readonly stdin?: Readable;
  readonly stdout?: Writable;
}

export interface RunningStdio {
  /** Settles when the host closes stdin or `close()` is called. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the tools over stdio, acting with the credentials of whoever started the process
 * (`options.bearer`). stdout carries only JSON-RPC; diagnostics go to stderr.
 */
export async function serveStdio(options: StdioOptions): Promise<RunningStdio> {
  const stdin = options.stdin ?? process.stdin;
  const environments = new CallerEnvironments(options);
  const server = createSandboxMcpServer(environments, options);
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  let closing: Promise<void> | undefined;
  let markClosed: (() => void) | undefined;
  const closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
  const shutdown = async (): Promise<void> => {
    environments.close();
    await server.close().catch(() => undefined);
    markClosed?.();
  };
  const close = (): Promise<void> => (closing ??= shutdown());
  // The host ends the server by closing its stdin (or exiting).
  stdin.once('end', () => void close());
  stdin.once('close', () => void close());
  await server.connect(transport);
  return { closed, close };
}
