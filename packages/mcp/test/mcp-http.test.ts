import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BrokerClient } from '@sbx/client';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { startMcpHttpServer, type RunningHttp } from '../src/index.js';
import {
  callTool,
  closeClients,
  connectHttp,
  errorCode,
  exerciseAllTools,
  TOOL_COUNT,
} from './mcp-support.js';

const SLOW = 120_000;
/** What an agent's caller needs: attach, create, run processes; no admin (which sees every owner). */
const CALLER_SCOPES = ['read:sandbox', 'write:sandbox', 'exec:sandbox'];
let real: RealBroker;
let mcp: RunningHttp;
let alice: string;
let bob: string;
const connect = (bearer?: string) => connectHttp(mcp.url, bearer);

beforeAll(async () => {
  real = await startRealBroker();
  alice = await real.harness.apiKey({ scopes: CALLER_SCOPES });
  bob = await real.harness.apiKey({ scopes: CALLER_SCOPES });
  mcp = await startMcpHttpServer({
    brokerUrl: real.harness.url,
    retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 10 },
  });
}, SLOW);

afterAll(async () => {
  await closeClients();
  await mcp?.close();
  await real?.close();
}, SLOW);

describe('MCP over Streamable HTTP', () => {
  it('serves on 127.0.0.1 at /mcp', () => {
    expect(mcp.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  });

  it(
    "lists the tools and calls each with the caller's own API key",
    async () => {
      expect(await exerciseAllTools(await connect(alice), 'thr_mcp_http')).toHaveLength(TOOL_COUNT);
    },
    SLOW,
  );

  it(
    'a wrong bearer is an MCP tool error UNAUTHENTICATED, and the server goes on',
    async () => {
      const stranger = await connect('sbk_not-a-key');
      expect((await stranger.listTools()).tools).toHaveLength(TOOL_COUNT);
      const refused = await callTool(stranger, 'environment_acquire', { thread_id: 'thr_mcp_bad' });
      expect(errorCode(refused)).toBe('UNAUTHENTICATED');
      expect(refused.text).toMatch(/^UNAUTHENTICATED: /);
      expect(errorCode(await callTool(stranger, 'read_file', { thread_id: 'thr_mcp_bad', path: 'a' }))).toBe(
        'UNAUTHENTICATED',
      );
      const again = await callTool(await connect(alice), 'environment_acquire', { thread_id: 'thr_mcp_ok' });
      expect(again.isError).toBe(false);
      await callTool(await connect(alice), 'environment_release', { thread_id: 'thr_mcp_ok' });
    },
    SLOW,
  );

  it('no bearer at all is refused with 401 before any tool runs', async () => {
    const response = await fetch(mcp.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { message: /^UNAUTHENTICATED/ } });
    await expect(connect()).rejects.toThrow(/401|UNAUTHENTICATED|Unauthorized/i);
  });

  it(
    "paths are the sandbox's own: a file written under /tmp is what run_command reads, and back",
    async () => {
      const client = await connect(alice);
      expect(client.getInstructions()).toMatch(/absolute anywhere in the sandbox, e\.g\. \/tmp\/x/);
      const { tools } = await client.listTools();
      const pathOf = (tool: string): unknown =>
        (tools.find((t) => t.name === tool)?.inputSchema.properties?.['path'] as { description?: string })
          ?.description;
      expect(pathOf('write_file')).toMatch(/absolute anywhere in the sandbox \(.*\/tmp\/out\.txt/);
      expect(pathOf('read_file')).not.toMatch(/inside it/);

      expect((await callTool(client, 'environment_acquire', { thread_id: 'thr_mcp_tmp' })).isError).toBe(
        false,
      );
      const written = await callTool(client, 'write_file', {
        path: '/tmp/mcp/note.txt',
        content: 'via mcp\n',
      });
      expect(written).toMatchObject({ isError: false, data: { path: '/tmp/mcp/note.txt', size: 8 } });
      // In /tmp, not in the workspace (the command's cwd).
      const seen = await callTool(client, 'run_command', {
        command: 'cat /tmp/mcp/note.txt; test -e note.txt || echo not in the workspace',
      });
      expect(seen.data).toMatchObject({ exit_code: 0, stdout: 'via mcp\nnot in the workspace\n' });
      const made = await callTool(client, 'run_command', {
        argv: ['sh', '-c', 'echo from exec > made.txt'],
        cwd: '/tmp/mcp',
      });
      expect(made.data).toMatchObject({ exit_code: 0 });
      const read = await callTool(client, 'read_file', { path: '/tmp/mcp/made.txt' });
      expect(read).toMatchObject({
        isError: false,
        text: 'from exec\n',
        data: { path: '/tmp/mcp/made.txt' },
      });
      const listed = await callTool(client, 'list_files', { path: '/tmp/mcp' });
      expect(listed.data).toMatchObject({
        path: '/tmp/mcp',
        entries: [
          { name: 'made.txt', type: 'file', size: 10 },
          { name: 'note.txt', type: 'file', size: 8 },
        ],
      });
      const release = await callTool(client, 'run_command', { argv: ['cat', '/etc/os-release'] });
      expect((await callTool(client, 'read_file', { path: '/etc/os-release' })).text).toBe(
        release.data['stdout'],
      );
      await callTool(client, 'environment_release', {});
    },
    SLOW,
  );

  it(
    'a write where the sandbox user may not write (/etc, under bubblewrap) is FORBIDDEN with its reason',
    async () => {
      // Unconfined, the sandbox's processes are the broker's user (root here): nothing to refuse.
      if (real.harness.provider.isolation !== 'bubblewrap') return;
      const client = await connect(alice);
      expect((await callTool(client, 'environment_acquire', { thread_id: 'thr_mcp_etc' })).isError).toBe(
        false,
      );
      const refused = await callTool(client, 'write_file', { path: '/etc/mcp.txt', content: 'no' });
      expect(errorCode(refused)).toBe('FORBIDDEN');
      expect(refused.text).toMatch(
        /^FORBIDDEN: .*\/etc\/mcp\.txt .*(read-only file system|permission denied)/,
      );
      expect(
        (await callTool(client, 'run_command', { argv: ['test', '-e', '/etc/mcp.txt'] })).data,
      ).toMatchObject({
        exit_code: 1,
      });
      await callTool(client, 'environment_release', {});
    },
    SLOW,
  );

  it(
    'sessions belong to their caller: another key never reaches them',
    async () => {
      const a = await connect(alice);
      const acquired = await callTool(a, 'environment_acquire', { thread_id: 'thr_mcp_mine' });
      expect(acquired.isError).toBe(false);
      await callTool(a, 'write_file', { path: 'secret.txt', content: 'alice only' });
      // Bob's requests go to the same server, but with his key: the broker knows no session of his.
      const b = await connect(bob);
      const peek = await callTool(b, 'read_file', { thread_id: 'thr_mcp_mine', path: 'secret.txt' });
      expect(errorCode(peek)).toBe('BINDING_NOT_FOUND');
      expect(errorCode(await callTool(b, 'list_files', {}))).toBe('BAD_REQUEST');
      // Alice's next request (a new MCP connection, same key) still finds her environment.
      const again = await callTool(await connect(alice), 'read_file', { path: 'secret.txt' });
      expect(again.text).toBe('alice only');
      await callTool(a, 'environment_release', {});
    },
    SLOW,
  );

  it(
    'a session released behind its back is forgotten; the next calls negotiate again',
    async () => {
      const client = await connect(alice);
      const first = await callTool(client, 'environment_acquire', { thread_id: 'thr_mcp_stale' });
      expect(first.isError).toBe(false);
      // Another client of Alice's releases the binding: the sandbox ends, its agent goes away.
      const other = new BrokerClient({ baseUrl: real.harness.url, apiKey: alice });
      await other.release(String(first.data['session_id']));
      expect(errorCode(await callTool(client, 'list_files', {}))).toBe('BACKEND_UNAVAILABLE');
      // Forgotten: the next call attaches again (`get`), and there is nothing to attach to.
      expect(errorCode(await callTool(client, 'list_files', {}))).toBe('BINDING_NOT_FOUND');
      const second = await callTool(client, 'environment_acquire', { thread_id: 'thr_mcp_stale' });
      expect(second.data['sandbox_id']).not.toBe(first.data['sandbox_id']);
      expect((await callTool(client, 'list_files', {})).isError).toBe(false);
      await callTool(client, 'environment_release', {});
    },
    SLOW,
  );
});
