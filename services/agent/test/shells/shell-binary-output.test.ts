import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket, type RawData } from 'ws';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx)] });
});
afterAll(async () => agent.close());

/** Opens a raw socket to the shell endpoint and records binary bytes and JSON frames. */
async function openRaw(start: Record<string, unknown>) {
  const ws = new WebSocket(`${agent.wsUrl}/v1/shell/ws`);
  const raw: Buffer[] = [];
  const json: Array<Record<string, unknown>> = [];
  ws.on('message', (data: RawData, isBinary: boolean) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
    if (isBinary) raw.push(bytes);
    else json.push(JSON.parse(bytes.toString('utf8')) as Record<string, unknown>);
  });
  await new Promise((resolve) => ws.once('open', resolve));
  ws.send(JSON.stringify({ type: 'auth', token: agent.token(['shell']) }));
  ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24, output: 'binary', ...start }));
  return { ws, raw, json };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(condition()).toBe(true);
}

describe('shell output as binary messages', () => {
  it('announces in ready where the replayed output starts, so a reattaching client can skip what it saw', async () => {
    const first = await openRaw({});
    await until(() => first.json.some((f) => f['type'] === 'ready'));
    const ready = first.json.find((f) => f['type'] === 'ready')!;
    expect(ready['output_offset']).toBe(0);
    // 3 MiB of output overflows the 1 MiB scrollback, so a later replay starts past 0.
    first.ws.send(
      JSON.stringify({
        type: 'stdin',
        data: 'head -c 3145728 /dev/zero | tr "\\0" x; echo; echo END-$((40+2))\n',
      }),
    );
    await until(() => Buffer.concat(first.raw).includes('END-42'));
    first.ws.close();
    const again = await openRaw({ shell_session_id: ready['shell_session_id'] });
    await until(() => again.json.some((f) => f['type'] === 'ready'));
    const offset = Number(again.json.find((f) => f['type'] === 'ready')!['output_offset']);
    expect(offset).toBeGreaterThan(3145728 - 1024 * 1024);
    await until(() => Buffer.concat(again.raw).includes('END-42'));
    // What the first client saw from `offset` on is exactly what the replay delivers.
    const seen = Buffer.concat(first.raw);
    const replay = Buffer.concat(again.raw);
    expect(replay.subarray(0, 4096).equals(seen.subarray(offset, offset + 4096))).toBe(true);
    again.ws.send(JSON.stringify({ type: 'close' }));
  });

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
