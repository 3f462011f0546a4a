import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import {
  STDIO_MAIN,
  TSX_LOADER,
  callTool,
  closeClients,
  connectStdio,
  errorCode,
  exerciseAllTools,
  TOOL_COUNT,
} from './mcp-support.js';

const SLOW = 120_000;
let real: RealBroker;

/** packages/mcp's stdio entry (through tsx), spawned as an MCP host would, with this key. */
const spawnServer = (apiKey: string) =>
  connectStdio(process.execPath, ['--import', TSX_LOADER, STDIO_MAIN], {
    ...getDefaultEnvironment(),
    SBX_BROKER_URL: real.harness.url,
    SBX_API_KEY: apiKey,
  });

beforeAll(async () => {
  real = await startRealBroker();
}, SLOW);

afterAll(async () => {
  await closeClients();
  await real?.close();
}, SLOW);

describe('MCP over stdio (packages/mcp/src/stdio-main.ts)', () => {
  it(
    "lists the tools and calls each with the starting user's key",
    async () => {
      const key = await real.harness.apiKey({ scopes: ['write:sandbox', 'exec:sandbox'] });
      expect(await exerciseAllTools(await spawnServer(key), 'thr_mcp_stdio')).toHaveLength(TOOL_COUNT);
    },
    SLOW,
  );

  it(
    'a bad key is an MCP tool error UNAUTHENTICATED; the server stays up',
    async () => {
      const client = await spawnServer('sbk_not-a-key');
      const refused = await callTool(client, 'environment_acquire', { thread_id: 'thr_mcp_stdio_bad' });
      expect(errorCode(refused)).toBe('UNAUTHENTICATED');
      expect((await client.listTools()).tools).toHaveLength(TOOL_COUNT);
      const ran = await callTool(client, 'run_command', { thread_id: 'x', command: 'true' });
      expect(errorCode(ran)).toBe('UNAUTHENTICATED');
    },
    SLOW,
  );
});
