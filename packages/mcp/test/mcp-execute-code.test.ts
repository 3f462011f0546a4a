// The MCP `execute_code` tool with the SDK's real client, over Streamable HTTP and stdio,
// against a real broker with real agents: listed, a run that prints, a run that exits 2
// (isError, exit_status error), a cap of 0 and a caller without exec:sandbox.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { startMcpHttpServer, type RunningHttp } from '../src/index.js';
import {
  STDIO_MAIN,
  TSX_LOADER,
  callTool,
  closeClients,
  connectHttp,
  connectStdio,
  errorCode,
} from './mcp-support.js';

const SLOW = 120_000;
const CALLER_SCOPES = ['read:sandbox', 'write:sandbox', 'exec:sandbox'];
let real: RealBroker;
let mcp: RunningHttp;
let key: string;

beforeAll(async () => {
  real = await startRealBroker();
  key = await real.harness.apiKey({ scopes: CALLER_SCOPES });
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

describe('execute_code over MCP', () => {
  it('is listed with its input schema', async () => {
    const { tools } = await (await connectHttp(mcp.url, key)).listTools();
    const tool = tools.find((t) => t.name === 'execute_code');
    expect(tool?.inputSchema).toMatchObject({
      type: 'object',
      properties: {
        code: { type: 'string' },
        language: { enum: ['python', 'javascript', 'bash'] },
        timeout_ms: { type: 'integer' },
        thread_id: { type: 'string' },
      },
      required: ['code'],
    });
  });

  it(
    "runs python in the thread's sandbox; a non-zero exit is isError with exit_status error",
    async () => {
      const client = await connectHttp(mcp.url, key);
      const thread = `thr_${randomUUID()}`;
      const acquired = await callTool(client, 'environment_acquire', { thread_id: thread });
      expect(acquired.isError).toBe(false);

      const ran = await callTool(client, 'execute_code', { code: 'print(6 * 7)' });
      expect(ran).toMatchObject({
        isError: false,
        data: { ok: true, exit_status: 'ok', stdout: '42\n', exit_code: 0 },
      });
      expect(ran.data['sandbox_id']).toBe(acquired.data['sandbox_id']);
      expect(JSON.parse(ran.text)).toEqual(ran.data);

      const failed = await callTool(client, 'execute_code', {
        thread_id: thread,
        code: 'import sys\nprint("partial")\nsys.exit(2)',
      });
      expect(failed).toMatchObject({
        isError: true,
        data: { ok: false, exit_status: 'error', exit_code: 2, stdout: 'partial\n' },
      });
      expect(failed.data['error']).toBeUndefined();

      const bash = await callTool(client, 'execute_code', { code: 'echo "$((2 + 3))"', language: 'bash' });
      expect(bash).toMatchObject({ isError: false, data: { stdout: '5\n' } });
      await callTool(client, 'environment_release', { thread_id: thread });
    },
    SLOW,
  );

  it(
    "a tenant's cap of 0 is isError with SandboxCapExceeded, resets_at and a hint",
    async () => {
      const tenantId = `tenant_${randomUUID()}`;
      const capped = await real.harness.apiKey({ tenantId, scopes: CALLER_SCOPES });
      const put = await fetch(`${real.harness.url}/admin/tenants/${tenantId}/policy`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${real.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ execute_code_agent_hourly_cap: 0 }),
      });
      expect(put.status).toBe(200);
      const client = await connectHttp(mcp.url, capped);
      await callTool(client, 'environment_acquire', { thread_id: 'thr_mcp_capped' });
      const refused = await callTool(client, 'execute_code', { code: 'print(1)' });
      expect(refused).toMatchObject({
        isError: true,
        data: {
          ok: false,
          exit_status: 'cap_exceeded',
          error: 'SandboxCapExceeded',
          dimension: 'agent_hourly',
          resets_at: expect.any(String),
          hint: expect.stringMatching(/^execute_code is capped/),
        },
      });
      await callTool(client, 'environment_release', {});
    },
    SLOW,
  );

  it(
    'a caller without exec:sandbox gets FORBIDDEN; no environment at all is BAD_REQUEST',
    async () => {
      const reader = await real.harness.apiKey({ scopes: ['read:sandbox', 'write:sandbox'] });
      const client = await connectHttp(mcp.url, reader);
      expect(errorCode(await callTool(client, 'execute_code', { code: 'print(1)' }))).toBe('BAD_REQUEST');
      await callTool(client, 'environment_acquire', { thread_id: 'thr_mcp_reader' });
      const refused = await callTool(client, 'execute_code', { code: 'print(1)' });
      expect(errorCode(refused)).toBe('FORBIDDEN');
      expect(refused.text).toMatch(/exec:sandbox/);
      await callTool(client, 'environment_release', {});
    },
    SLOW,
  );

  it(
    'works the same over stdio',
    async () => {
      const client = await connectStdio(process.execPath, ['--import', TSX_LOADER, STDIO_MAIN], {
        ...getDefaultEnvironment(),
        SBX_BROKER_URL: real.harness.url,
        SBX_API_KEY: key,
      });
      const thread = `thr_${randomUUID()}`;
      await callTool(client, 'environment_acquire', { thread_id: thread });
      const ran = await callTool(client, 'execute_code', {
        code: 'console.log("from node")',
        language: 'javascript',
      });
      expect(ran).toMatchObject({ isError: false, data: { ok: true, stdout: 'from node\n' } });
      await callTool(client, 'environment_release', { thread_id: thread });
    },
    SLOW,
  );
});
