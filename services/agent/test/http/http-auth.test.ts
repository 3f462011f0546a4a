import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Router } from 'express';
import { SigningKey } from '@sbx/tokens';
import type { AgentFeature } from '../../src/agent-context.js';
import { capabilityOf, requireCapability } from '../../src/http/capability.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

/** One route needing fs:ro, one needing fs:rw: enough to prove the checks the real routes rely on. */
function probeFeature(): AgentFeature {
  const router = Router();
  router.get('/test/read', requireCapability('fs:ro'), (_req, res) => {
    res.json({ sub: capabilityOf(res).claims.sub });
  });
  router.post('/test/write', requireCapability('fs:rw'), (_req, res) => {
    res.status(204).end();
  });
  return { name: 'probe', router };
}

describe('agent HTTP authentication', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startTestAgent({ features: () => [probeFeature()] });
  });
  afterAll(async () => agent.close());

  const get = (path: string, token?: string): Promise<Response> =>
    fetch(
      `${agent.httpUrl}${path}`,
      token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
    );

  it('answers a missing token with 401, WWW-Authenticate and the envelope', async () => {
    const res = await get('/test/read');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toMatchObject({
      error: { code: 'UNAUTHENTICATED', retryable: false, request_id: expect.any(String) },
    });
  });

  it.each([
    ['expired', () => agent.token(['fs:ro'], { ttlSeconds: 60, issuedSecondsAgo: 120 })],
    ['for another sandbox', () => agent.token(['fs:ro'], { sandboxId: 'sb_elsewhere' })],
    ['signed with another key', () => agent.token(['fs:ro'], { key: SigningKey.generate() })],
    ['not a JWT', () => 'abc.def'],
  ])('answers a token %s with 401', async (_name, token) => {
    const res = await get('/test/read', token());
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNAUTHENTICATED');
  });

  const withAuthorization = (authorization: string): Promise<Response> =>
    fetch(`${agent.httpUrl}/test/read`, { headers: { authorization } });

  // RFC 6750 §2.1 / RFC 9110 §11.1: the auth scheme is case-insensitive, like the broker's.
  it.each(['bearer', 'BEARER', 'bEaReR', 'Bearer  '])('accepts the scheme written "%s"', async (scheme) => {
    const res = await withAuthorization(`${scheme} ${agent.token(['fs:ro'], { sub: 'usr_scheme' })}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ sub: 'usr_scheme' });
  });

  it.each([
    ['a scheme without a token', () => 'bearer'],
    ['no space after the scheme', () => `bearer${agent.token(['fs:ro'])}`],
    ['a tab instead of a space', () => `Bearer\t${agent.token(['fs:ro'])}`],
    ['two tokens', () => `Bearer ${agent.token(['fs:ro'])} ${agent.token(['fs:ro'])}`],
    ['a character outside b64token', () => `bearer ${agent.token(['fs:ro'])}!`],
    ['another scheme', () => 'Basic dXNlcjpwYXNz'],
    ['a scheme that only starts like Bearer', () => `Bearers ${agent.token(['fs:ro'])}`],
  ])('answers a malformed header (%s) with the 401 envelope', async (_name, header) => {
    const res = await withAuthorization(header());
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toMatchObject({
      error: { code: 'UNAUTHENTICATED', retryable: false, request_id: expect.any(String) },
    });
  });

  it('authorizes by scope: fs:ro reads but may not write, fs:rw does both', async () => {
    const reader = agent.token(['fs:ro']);
    const writer = agent.token(['fs_write']);
    expect((await get('/test/read', reader)).status).toBe(200);
    const denied = await fetch(`${agent.httpUrl}/test/write`, {
      method: 'POST',
      headers: { authorization: `Bearer ${reader}` },
    });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: { code: string } }).error.code).toBe('CAPABILITY_DENIED');
    expect((await get('/test/read', writer)).status).toBe(200);
    const allowed = await fetch(`${agent.httpUrl}/test/write`, {
      method: 'POST',
      headers: { authorization: `Bearer ${writer}` },
    });
    expect(allowed.status).toBe(204);
  });

  it('logs each request with jti, sub, route, status and duration, never the token', async () => {
    const token = agent.token(['fs:ro'], { sub: 'usr_logged' });
    await get('/test/read', token);
    const line = agent.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['sub'] === 'usr_logged');
    expect(line).toMatchObject({ route: '/test/read', status: 200, jti: expect.stringMatching(/^tok_/) });
    expect(typeof line?.['duration_ms']).toBe('number');
    expect(agent.logs.join('')).not.toContain(token);
    expect(agent.logs.join('')).not.toContain(token.split('.')[2]);
  });
});

describe('signed-URL bypass', () => {
  it('answers a sig parameter on a bearer route with 401, not a crash', async () => {
    await using agent = await startTestAgent({ features: () => [probeFeature()] });
    const res = await fetch(`${agent.httpUrl}/test/read?sig=abc&exp=1`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNAUTHENTICATED');
  });
});
