// The agent's HTTP and WebSocket hardening (docs/security.md, "Hardening"):
// security headers, CORS and Origin allowlists, the cap on WebSockets still
// awaiting `auth`, the server's explicit limits, no stack in any answer.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { WebSocket } from 'ws';
import type { AgentFeature } from '../../src/agent-context.js';
import type { WsSession } from '../../src/http/ws/ws-session.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';

const ALLOWED = 'https://console.example.com';
const CAP = 5;

const echo: AgentFeature = {
  name: 'echo',
  wsRoutes: [
    {
      paths: ['/test/echo'],
      endpoint: 'exec',
      anyOf: ['process'],
      open(session: WsSession<'exec'>) {
        return {
          onFrame(frame) {
            if (frame.type === 'stdin') session.send({ type: 'stdout', data: frame.data });
          },
        };
      },
    },
  ],
};

const boomRouter = express.Router();
boomRouter.get('/test/boom', () => {
  throw new TypeError('secret detail at /srv/agent/boom.ts:12');
});
const boom: AgentFeature = { name: 'boom', router: boomRouter };

/** The HTTP status of a refused upgrade, or 101 when it was accepted. */
function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      ws.terminate();
    });
    ws.on('error', () => resolve(0));
  });
}

describe('agent hardening', () => {
  let agent: TestAgent;
  let url: string;
  beforeAll(async () => {
    agent = await startTestAgent({
      features: () => [echo, boom],
      wsAuthTimeoutMs: 5000,
      server: { wsMaxUnauthenticated: CAP, allowedOrigins: [ALLOWED] },
    });
    url = `${agent.wsUrl}/test/echo`;
  });
  afterAll(async () => {
    await agent.close();
  });

  it('sends the security headers, without X-Powered-By or HSTS', async () => {
    for (const res of [
      await request(agent.httpUrl).get('/healthz'),
      await request(agent.httpUrl).get('/v1/info'),
    ]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-powered-by']).toBeUndefined();
      expect(res.headers['strict-transport-security']).toBeUndefined();
    }
  });

  it('answers CORS preflights for allowlisted origins only, before authentication', async () => {
    const preflight = await request(agent.httpUrl)
      .options('/v1/info')
      .set('Origin', ALLOWED)
      .set('Access-Control-Request-Method', 'GET');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(ALLOWED);
    const other = await request(agent.httpUrl).get('/healthz').set('Origin', 'https://evil.example.com');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses WebSocket upgrades from origins not allowlisted; no Origin is a non-browser client', async () => {
    expect(await upgradeStatus(url, { Origin: 'https://evil.example.com' })).toBe(403);
    expect(await upgradeStatus(url, { Origin: 'null' })).toBe(403);
    expect(await upgradeStatus(url, { Origin: ALLOWED })).toBe(101);
    expect(await upgradeStatus(url)).toBe(101);
  });

  it('closes sockets past the cap of unauthenticated ones with 1013, and frees room on auth', async () => {
    const idle = await Promise.all(Array.from({ length: CAP }, () => TestSocket.open(url)));
    const extra = await TestSocket.open(url);
    expect(await extra.closed).toEqual({ code: 1013, reason: 'too many unauthenticated connections' });
    // Authenticating one frees a slot for the next.
    idle[0]!.send({ type: 'auth', token: agent.token(['process']) });
    await idle[0]!.next((f) => f['type'] === 'auth_ok');
    const next = await TestSocket.authed(url, agent.token(['process']));
    expect(next.frames[0]).toMatchObject({ type: 'auth_ok' });
    const warnings = agent.logs.filter((line) => line.includes('unauthenticated WebSocket cap reached'));
    expect(warnings).toHaveLength(1);
    for (const socket of [...idle, next]) socket.ws.close();
    await Promise.all([...idle, next].map((socket) => socket.closed));
  });

  it('sets explicit header size and timeouts on the server', () => {
    expect(agent.server.headersTimeout).toBe(20_000);
    expect(agent.server.requestTimeout).toBe(3_600_000);
    expect(agent.server.keepAliveTimeout).toBe(5_000);
  });

  it('refuses an oversized request head with 431', async () => {
    const res = await fetch(`${agent.httpUrl}/healthz`, { headers: { 'x-pad': 'x'.repeat(20 * 1024) } });
    expect(res.status).toBe(431);
  });

  it('answers a thrown non-SbxError as INTERNAL without a stack or its message', async () => {
    const res = await request(agent.httpUrl)
      .get('/test/boom')
      .set('Authorization', `Bearer ${agent.token(['process'])}`);
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: 'INTERNAL' });
    expect(res.text).not.toContain('secret detail');
    expect(res.text).not.toMatch(/\bat .+:\d+/);
  });
});
