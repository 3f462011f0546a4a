// `sbx mcp` answers `initialize` before loading the MCP SDK (early-initialize.ts): the answer
// must be the SDK's own, for every protocol version a host may ask for, and the SDK's answer to
// the replayed request must never reach the host a second time.
import { PassThrough } from 'node:stream';
import { createInterface } from 'node:readline';
import { describe, expect, it } from '@jest/globals';
import { SUPPORTED_PROTOCOL_VERSIONS as SDK_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { serveStdioEarly } from '../src/early-initialize.js';
import { serveStdio } from '../src/server.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../src/server-info.js';

type Serve = typeof serveStdio;

const initialize = (id: number, protocolVersion: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'test-host', version: '1' } },
  });

/** Sends `lines`, collects every answer until `count` have come, then closes stdin. */
async function exchange(serve: Serve, lines: readonly string[], count: number): Promise<unknown[]> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const answers: unknown[] = [];
  const done = new Promise<void>((resolve) => {
    createInterface({ input: stdout }).on('line', (line) => {
      answers.push(JSON.parse(line));
      if (answers.length === count) resolve();
    });
  });
  const running = serve({ brokerUrl: 'http://127.0.0.1:9', bearer: () => 'sbk_unused', stdin, stdout });
  for (const line of lines) stdin.write(`${line}\n`);
  await done;
  stdin.end();
  await (
    await running
  ).closed;
  return answers;
}

describe('sbx mcp: initialize answered before the SDK loads', () => {
  it('knows every protocol version the SDK supports, newest first', () => {
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(SDK_VERSIONS);
  });

  for (const version of [SDK_VERSIONS[0]!, '2024-11-05', '1999-01-01']) {
    it(`answers initialize (${version}) exactly as the SDK's server does`, async () => {
      const [early] = await exchange(serveStdioEarly, [initialize(1, version)], 1);
      const [sdk] = await exchange(serveStdio, [initialize(1, version)], 1);
      expect(early).toEqual(sdk);
    });
  }

  it('gives one answer to initialize, then lets the SDK answer the rest', async () => {
    const answers = await exchange(
      serveStdioEarly,
      [
        initialize(7, SDK_VERSIONS[0]!),
        JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
        JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list' }),
      ],
      2,
    );
    expect(answers.map((answer) => (answer as { id: number }).id)).toEqual([7, 8]);
    const tools = (answers[1] as { result: { tools: { name: string }[] } }).result.tools;
    expect(tools.map((tool) => tool.name)).toContain('environment_acquire');
  });

  it('leaves a first message that is not initialize to the SDK', async () => {
    const [answer] = await exchange(
      serveStdioEarly,
      [JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' })],
      1,
    );
    expect(answer).toMatchObject({ id: 3 });
  });
});
