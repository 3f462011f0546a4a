import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket, type RawData } from 'ws';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx)] });
});
afterAll(async () => agent.close());

describe('shell output as binary messages', () => {
  it('sends raw terminal bytes as binary messages and every other frame as JSON', async () => {
    const ws = new WebSocket(`${agent.wsUrl}/v1/shell/ws`);
    const raw: Buffer[] = [];
    const json: Array<Record<string, unknown>> = [];
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
      if (isBinary) raw.push(bytes);
      else json.push(JSON.parse(bytes.toString('utf8')) as Record<string, unknown>);
    });
    await new Promise((resolve) => ws.once('open', resolve));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send(JSON.stringify({ type: 'auth', token: agent.token(['shell']) }));
    ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24, output: 'binary' }));
    // Bytes that are not UTF-8 arrive untouched, with no base64 in between.
    ws.send(JSON.stringify({ type: 'stdin', data: "printf 'A\\377\\376B'; echo; exit 7\n" }));
    expect(await closed).toBe(1000);
    const output = Buffer.concat(raw);
    expect(output.includes(Buffer.from([0x41, 0xff, 0xfe, 0x42]))).toBe(true);
    expect(json.map((frame) => frame['type'])).toEqual(['auth_ok', 'ready', 'exit']);
    expect(json.at(-1)).toEqual({ type: 'exit', code: 7 });
  });
});
