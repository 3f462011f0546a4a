import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SigningKey } from '@sbx/tokens';
import { WebSocket } from 'ws';
import type { AgentFeature } from '../../src/agent-context.js';
import type { WsSession } from '../../src/http/ws/ws-session.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';

/** A minimal endpoint that proves what the hub forwards: it echoes stdin as stdout. */
function echoFeature(opened: { count: number }): AgentFeature {
  return {
    name: 'echo',
    wsRoutes: [
      {
        paths: ['/test/echo'],
        endpoint: 'exec',
        anyOf: ['process'],
        open(session: WsSession<'exec'>) {
          opened.count += 1;
          return {
            onFrame(frame) {
              if (frame.type === 'stdin') session.send({ type: 'stdout', data: frame.data });
              if (frame.type === 'close') session.close(1000, 'bye');
            },
          };
        },
      },
    ],
  };
}

describe('WebSocket authentication and framing', () => {
  let agent: TestAgent;
  const opened = { count: 0 };
  let url: string;

  beforeAll(async () => {
    agent = await startTestAgent({ features: () => [echoFeature(opened)], wsAuthTimeoutMs: 300 });
    url = `${agent.wsUrl}/test/echo`;
  });
  afterAll(async () => agent.close());

  it('authenticates by the first frame and then forwards frames', async () => {
    const socket = await TestSocket.authed(url, agent.token(['process']));
    expect(socket.frames[0]).toMatchObject({ type: 'auth_ok', session_id: 'ssn_test' });
    socket.send({ type: 'stdin', data: 'hi' });
    expect(await socket.next((f) => f['type'] === 'stdout')).toEqual({ type: 'stdout', data: 'hi' });
    socket.send({ type: 'ping', id: 'p1' });
    expect(await socket.next((f) => f['type'] === 'pong')).toEqual({ type: 'pong', id: 'p1' });
    socket.close();
  });

  it('closes with 1008 when no auth frame arrives in time, opening nothing', async () => {
    const before = opened.count;
    const socket = await TestSocket.open(url);
    expect(await socket.closed).toEqual({ code: 1008, reason: 'authentication timeout' });
    expect(opened.count).toBe(before);
  });

  it('closes with 1008 when the first frame is not auth', async () => {
    const socket = await TestSocket.open(url);
    socket.send({ type: 'stdin', data: 'sneaky' });
    expect((await socket.closed).code).toBe(1008);
    expect(socket.frames).toEqual([expect.objectContaining({ type: 'error' })]);
  });

  it.each([
    ['a token for another sandbox', () => agent.token(['process'], { sandboxId: 'sb_other' })],
    ['a token signed with another key', () => agent.token(['process'], { key: SigningKey.generate() })],
    ['an expired token', () => agent.token(['process'], { ttlSeconds: 60, issuedSecondsAgo: 120 })],
    ['a token without the scope', () => agent.token(['fs:rw', 'shell'])],
    ['garbage', () => 'not.a.token'],
  ])('refuses %s with 1008 and an error frame', async (_name, token) => {
    const socket = await TestSocket.open(url);
    socket.send({ type: 'auth', token: token() });
    const closed = await socket.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason.length).toBeGreaterThan(0);
    expect(socket.frames[0]).toMatchObject({
      type: 'error',
      error: { code: expect.stringMatching(/UNAUTHENTICATED|CAPABILITY_DENIED/) },
    });
  });

  it('answers malformed JSON with an error frame and 1008', async () => {
    const socket = await TestSocket.authed(url, agent.token(['process']));
    socket.send('{"type": "stdin", ');
    expect((await socket.closed).code).toBe(1008);
    expect(socket.frames.at(-1)).toMatchObject({ type: 'error', error: { code: 'BAD_REQUEST' } });
  });

  // Found by reliability/fuzz: a reason cut to 120 characters was still up to 480 bytes, `ws`
  // threw past RFC 6455's 123, and the throw ended the agent, before any token was checked.
  it('closes with a reason cut to 123 bytes when the frame quotes many-byte characters, and stays up', async () => {
    const socket = await TestSocket.open(url);
    socket.send({ type: '🙂'.repeat(60) });
    const closed = await socket.closed;
    expect(closed.code).toBe(1008);
    expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(123);
    expect(closed.reason).toMatch(/^unknown frame type "🙂+….*\.\.\.$/u);
    const again = await TestSocket.authed(url, agent.token(['process']));
    expect(again.frames[0]).toMatchObject({ type: 'auth_ok' });
    again.close();
  });

  it('closes with 1009 on an oversized frame and stays up', async () => {
    const socket = await TestSocket.authed(url, agent.token(['process']));
    socket.send({ type: 'stdin', data: 'x'.repeat(2 * 1024 * 1024) });
    expect((await socket.closed).code).toBe(1009);
    const again = await TestSocket.authed(url, agent.token(['process']));
    expect(again.frames[0]).toMatchObject({ type: 'auth_ok' });
    again.close();
  });

  it('closes with 4401 when the token expires, unless a fresh auth frame extends it', async () => {
    const shortLived = await TestSocket.authed(url, agent.token(['process'], { ttlSeconds: 3 }));
    const extended = await TestSocket.authed(url, agent.token(['process'], { ttlSeconds: 3 }));
    extended.send({ type: 'auth', token: agent.token(['process'], { ttlSeconds: 60 }) });
    await extended.next(
      (f) => f['type'] === 'auth_ok' && extended.frames.filter((x) => x['type'] === 'auth_ok').length === 2,
    );
    expect((await shortLived.closed).code).toBe(4401);
    extended.send({ type: 'stdin', data: 'still here' });
    expect(await extended.next((f) => f['data'] === 'still here')).toBeDefined();
    expect(extended.ws.readyState).toBe(WebSocket.OPEN);
    extended.close();
  });

  it('closes when a later auth frame carries a token for another sandbox', async () => {
    const socket = await TestSocket.authed(url, agent.token(['process']));
    socket.send({ type: 'auth', token: agent.token(['process'], { sandboxId: 'sb_other' }) });
    expect((await socket.closed).code).toBe(1008);
  });

  it('answers an upgrade on an unknown path with 404', async () => {
    const ws = new WebSocket(`${agent.wsUrl}/nope`);
    const status = await new Promise<number | undefined>((resolve) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode));
      ws.on('error', () => resolve(undefined));
    });
    expect(status).toBe(404);
  });

  it('never logs a token', () => {
    expect(agent.logs.join('')).not.toMatch(/eyJ[A-Za-z0-9_-]+\.eyJ/);
  });
});
