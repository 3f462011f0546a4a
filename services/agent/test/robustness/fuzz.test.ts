import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket } from 'ws';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { filesFeature } from '../../src/http/files/files-feature.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

/** A small seeded PRNG (mulberry32) so a failure can be replayed from its seed. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = 20261125;
const random = prng(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const junkString = (max: number): string =>
  Array.from({ length: Math.floor(random() * max) }, () =>
    String.fromCharCode(Math.floor(random() * 0xffff)),
  ).join('');

/** Random bytes, percent-encoded: often invalid UTF-8 once decoded, which is the point. */
const junkQuery = (): string =>
  Array.from(
    { length: 1 + Math.floor(random() * 12) },
    () =>
      `%${Math.floor(random() * 256)
        .toString(16)
        .padStart(2, '0')}`,
  ).join('');

const WEIRD_VALUES: unknown[] = [
  null,
  true,
  -1,
  1e308,
  'x',
  '',
  [],
  {},
  [1, [2, [3]]],
  { a: { b: { c: {} } } },
  'A'.repeat(5000),
];
const FRAME_TYPES = ['auth', 'start', 'stdin', 'resize', 'signal', 'ping', 'close', 'event', 'nope', ''];
const FIELDS = [
  'token',
  'data',
  'encoding',
  'cols',
  'rows',
  'argv',
  'cmd',
  'cwd',
  'env',
  'signal',
  'path',
  'id',
  'eof',
];

function malformedFrame(): string | Buffer {
  switch (Math.floor(random() * 5)) {
    case 0:
      return junkString(200);
    case 1:
      return Buffer.from(
        Array.from({ length: 1 + Math.floor(random() * 64) }, () => Math.floor(random() * 256)),
      );
    case 2:
      return JSON.stringify(pick(WEIRD_VALUES));
    case 3:
      return `{"type":"${pick(FRAME_TYPES)}",${junkString(20)}`;
    default: {
      const frame: Record<string, unknown> = { type: pick(FRAME_TYPES) };
      for (let i = 0; i < 1 + random() * 4; i++) frame[pick(FIELDS)] = pick(WEIRD_VALUES);
      return JSON.stringify(frame);
    }
  }
}

/** Opens a socket, optionally authenticates, sends one bad frame, waits for the close. */
async function sendBadFrame(url: string, token: string | undefined, frame: string | Buffer): Promise<number> {
  const ws = new WebSocket(url);
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  if (token !== undefined) ws.send(JSON.stringify({ type: 'auth', token }));
  ws.send(frame);
  const code = await new Promise<number>((resolve) => {
    const timer = setTimeout(() => {
      ws.terminate();
      resolve(-1);
    }, 1500);
    ws.once('close', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  return code;
}

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];
const PATHS = [
  '/files/',
  '/files/a/../../x',
  '/files/%2e%2e/%2e%2e',
  '/v1/exec',
  '/v1/processes',
  '/v1/processes/x/output',
  '/v1/files/move',
  '/v1/files/upload',
  '/v1/files/download',
  '/v1/files/stat',
  '/nope',
  '/files/%00',
  '/files/%ZZ',
  '/v1/processes/%F0%9F/signal',
];

describe(`agent robustness (seed ${SEED})`, () => {
  let agent: TestAgent;
  let token: string;
  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => [filesFeature(ctx), execFeature(ctx), shellsFeature(ctx)],
    });
    token = agent.token(['fs:rw', 'process', 'shell']);
  });
  afterAll(async () => agent.close());

  it('survives 1000 malformed WebSocket frames, closing each offender with a policy code', async () => {
    const endpoints = ['/v1/exec/ws', '/v1/files/watch', '/v1/shell/ws', '/ws'];
    const codes = new Map<number, number>();
    for (let i = 0; i < 1000; i += 10) {
      const batch = Array.from({ length: 10 }, (_, j) =>
        sendBadFrame(
          `${agent.wsUrl}${pick(endpoints)}`,
          (i + j) % 2 === 0 ? token : undefined,
          malformedFrame(),
        ),
      );
      for (const code of await Promise.all(batch)) codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    // A malformed frame is a protocol violation (1008) or too big (1009); a valid-looking one may be served (1000).
    for (const code of codes.keys()) expect([1000, 1008, 1009, -1]).toContain(code);
    expect(codes.get(1008) ?? 0).toBeGreaterThan(500);
    expect((await fetch(`${agent.httpUrl}/healthz`)).status).toBe(200);
  });

  it('answers 1000 random requests with envelopes, never a 5xx or a stack trace', async () => {
    const statuses = new Map<number, number>();
    const notEnveloped: string[] = [];
    for (let i = 0; i < 1000; i += 20) {
      const batch = Array.from({ length: 20 }, async () => {
        const method = pick(METHODS);
        const headers: Record<string, string> = {
          'content-type': pick(['application/json', 'text/plain', 'application/octet-stream']),
        };
        if (random() < 0.8)
          headers['authorization'] = pick([
            `Bearer ${token}`,
            'Bearer x.y.z',
            'Basic abc',
            `Bearer ${token}x`,
          ]);
        if (random() < 0.2) headers['range'] = pick(['bytes=5-1', 'bytes=-', 'bytes=99999999-', 'items=1-2']);
        const body =
          method === 'GET' || method === 'HEAD'
            ? undefined
            : pick([junkString(300), JSON.stringify(pick(WEIRD_VALUES)), '{"argv":["true"],"cmd":"x"}']);
        const res = await fetch(
          `${agent.httpUrl}${pick(PATHS)}${random() < 0.3 ? `?path=${junkQuery()}` : ''}`,
          { method, headers, body },
        );
        const text = await res.text();
        const enveloped =
          res.status < 400 || method === 'HEAD' || /"error":\{"code":"[A-Z_]+","message":/.test(text);
        if (!enveloped) notEnveloped.push(`${method} ${res.status} ${text.slice(0, 80)}`);
        expect(text).not.toMatch(/\n\s+at [\w.<>]+ \(/);
        return res.status;
      });
      for (const status of await Promise.all(batch)) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(notEnveloped).toEqual([]);
    const internal = agent.logs.filter((line) => line.includes('"internal error"'));
    expect(internal).toEqual([]);
    expect([...statuses.keys()].filter((status) => status >= 500)).toEqual([]);
    expect((await fetch(`${agent.httpUrl}/healthz`)).status).toBe(200);
  });
});
