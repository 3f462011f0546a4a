// What the MCP tests share: calling a tool with the SDK's Client, and one run through every
// tool against a real broker, whatever the transport.
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Readable } from 'node:stream';
import { expect } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_NAMES } from '../src/index.js';

/** How many tools the server lists. */
export const TOOL_COUNT = TOOL_NAMES.length;

/** The SDK's clients a test opened; `closeClients` in its afterAll. */
const opened: Client[] = [];

export async function closeClients(): Promise<void> {
  for (const client of opened.splice(0)) await client.close().catch(() => undefined);
}

/** The SDK's client over Streamable HTTP, sending `Authorization: Bearer <bearer>` when given. */
export async function connectHttp(url: string, bearer?: string): Promise<Client> {
  const headers: Record<string, string> = bearer === undefined ? {} : { authorization: `Bearer ${bearer}` };
  const client = new Client({ name: 'sbx-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  opened.push(client);
  return client;
}

/** The SDK's client over stdio, spawning `command` as an MCP host would (environment: only `env`). */
export async function connectStdio(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Client> {
  const defined = Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined);
  const transport = new StdioClientTransport({
    command,
    args,
    env: Object.fromEntries(defined),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'sbx-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  opened.push(client);
  return client;
}

/** The first match of `pattern` in what `stream` writes (rejects if it ends first). */
export function firstMatch(stream: Readable, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = pattern.exec(text);
      if (match !== null) resolve(match);
    });
    stream.once('end', () => reject(new Error(`no ${String(pattern)} in:\n${text}`)));
  });
}

/** `node --import <this> packages/mcp/src/stdio-main.ts` runs the stdio server from source. */
export const TSX_LOADER = pathToFileURL(
  createRequire(new URL('../../../package.json', import.meta.url)).resolve('tsx'),
).href;
export const STDIO_MAIN = fileURLToPath(new URL('../src/stdio-main.ts', import.meta.url));

export interface ToolOutcome {
  readonly isError: boolean;
  readonly text: string;
  readonly data: Record<string, unknown>;
}

export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<ToolOutcome> {
  const result = CallToolResultSchema.parse(await client.callTool({ name, arguments: args }));
  const first = result.content[0];
  return {
    isError: result.isError === true,
    text: first?.type === 'text' ? first.text : '',
    data: result.structuredContent ?? {},
  };
}

/** The protocol error code of a tool error (and that it is one). */
export function errorCode(outcome: ToolOutcome): unknown {
  expect(outcome.isError).toBe(true);
  const error = outcome.data['error'];
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}

/** Every tool once, on `thread`: acquire, files, exec, heartbeat, refresh, release; the tools called. */
export async function exerciseAllTools(client: Client, thread: string): Promise<string[]> {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).toSorted()).toEqual([...TOOL_NAMES].toSorted());

  const acquired = await callTool(client, 'environment_acquire', { thread_id: thread });
  expect(acquired.isError).toBe(false);
  expect(acquired.data).toMatchObject({ thread_id: thread, state: 'active' });
  expect(acquired.data['granted_capabilities']).toEqual(expect.arrayContaining(['fs:rw', 'process']));
  expect(Object.keys(acquired.data)).not.toContain('token');
  expect(acquired.text).not.toMatch(/access_token|"token"/);
  const workspace = String(acquired.data['workspace_path']);

  // No thread_id: the environment acquired last.
  const written = await callTool(client, 'write_file', { path: 'notes/hello.txt', content: 'hi from mcp\n' });
  expect(written).toMatchObject({ isError: false, data: { path: `${workspace}/notes/hello.txt`, size: 12 } });
  const read = await callTool(client, 'read_file', {
    thread_id: thread,
    path: `${workspace}/notes/hello.txt`,
  });
  expect(read).toMatchObject({ isError: false, text: 'hi from mcp\n', data: { encoding: 'utf-8' } });
  // Given relative, answered in the absolute form, as write_file and list_files answer (docs/files.md).
  const relative = await callTool(client, 'read_file', { path: './notes//hello.txt' });
  expect(relative.data).toMatchObject({ path: `${workspace}/notes/hello.txt`, size: 12 });
  const listed = await callTool(client, 'list_files', { thread_id: thread, path: 'notes' });
  expect(listed.data).toMatchObject({
    path: `${workspace}/notes`,
    entries: [{ name: 'hello.txt', type: 'file' }],
  });

  const ran = await callTool(client, 'run_command', {
    command: 'cat notes/hello.txt; echo oops >&2; exit 3',
  });
  expect(ran).toMatchObject({
    isError: false,
    data: { exit_code: 3, stdout: 'hi from mcp\n', stderr: 'oops\n', timed_out: false },
  });
  const argv = await callTool(client, 'run_command', { thread_id: thread, argv: ['pwd'] });
  expect(argv.data).toMatchObject({ exit_code: 0, stdout: `${workspace}\n` });

  // The agent's refusals are tool errors with the protocol's code.
  expect(errorCode(await callTool(client, 'read_file', { path: '/proc/self/status' }))).toBe('FORBIDDEN');
  expect(errorCode(await callTool(client, 'read_file', { path: 'missing.txt' }))).toBe('NOT_FOUND');
  expect(errorCode(await callTool(client, 'run_command', {}))).toBe('BAD_REQUEST');
  const invalid = await callTool(client, 'read_file', { path: '' });
  expect(invalid).toMatchObject({ isError: true, text: expect.stringMatching(/Input validation error/) });

  const beat = await callTool(client, 'environment_heartbeat', { thread_id: thread });
  expect(beat.data).toMatchObject({ session_id: acquired.data['session_id'], state: 'active' });
  expect(Date.parse(String(beat.data['lease_expires_at']))).toBeGreaterThan(Date.now());
  const refreshed = await callTool(client, 'environment_refresh', {});
  expect(refreshed).toMatchObject({ isError: false, data: { session_id: acquired.data['session_id'] } });
  expect(Date.parse(String(refreshed.data['expires_at']))).toBeGreaterThan(Date.now());

  const computed = await callTool(client, 'execute_code', { thread_id: thread, code: 'print(6 * 7)' });
  expect(computed).toMatchObject({ isError: false, data: { ok: true, exit_status: 'ok', stdout: '42\n' } });

  const released = await callTool(client, 'environment_release', { thread_id: thread });
  expect(released.data).toEqual({
    session_id: acquired.data['session_id'],
    thread_id: thread,
    released: true,
  });
  expect(errorCode(await callTool(client, 'list_files', {}))).toBe('BAD_REQUEST');
  return tools.map((t) => t.name);
}
