import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import type { AgentFeature } from '../../src/agent-context.js';
import { startTestAgent, TEST_ISSUER, type TestAgent } from '../support/agent-harness.js';

/** Counters, so the test can tell the full body from the liveness one. */
const countingFeature = (): AgentFeature => ({
  name: 'counting',
  stats: () => ({ shells: 2, processes: 5 }),
});

describe('agent /healthz', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startTestAgent({ features: () => [countingFeature()] });
  });
  afterAll(async () => agent.close());

  const healthz = (authorization?: string): Promise<Response> =>
    fetch(`${agent.httpUrl}/healthz`, authorization === undefined ? {} : { headers: { authorization } });

  it('tells an anonymous caller only that it is alive: no sandbox id, version or counters', async () => {
    const res = await healthz();
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ status: 'ok' });
    expect(text).not.toContain(agent.ctx.sandboxId);
    expect(res.headers.get('vary')).toMatch(/authorization/i);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it.each([['shell:ro'], ['fs:ro'], ['process']])(
    'names its sandbox and reports counters to a token granting only %s',
    async (scope) => {
      const res = await healthz(`Bearer ${agent.token([scope])}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        status: 'ok',
        sandbox_id: agent.ctx.sandboxId,
        version: expect.any(String),
        uptime_seconds: expect.any(Number),
        launcher: expect.any(String),
        shells: 2,
        processes: 5,
      });
    },
  );

  it('logs who asked, like any authenticated request', async () => {
    await healthz(`Bearer ${agent.token(['shell:ro'], { sub: 'usr_health' })}`);
    const line = agent.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['sub'] === 'usr_health');
    expect(line).toMatchObject({ route: '/healthz', status: 200, jti: expect.stringMatching(/^tok_/) });
  });

  it.each([
    ['for another sandbox', () => `Bearer ${agent.token(['shell:ro'], { sandboxId: 'sb_elsewhere' })}`],
    ['signed with another key', () => `Bearer ${agent.token(['shell:ro'], { key: SigningKey.generate() })}`],
    ['expired', () => `Bearer ${agent.token(['shell:ro'], { ttlSeconds: 60, issuedSecondsAgo: 120 })}`],
    [
      'from another issuer',
      () =>
        `Bearer ${
          mintCapabilityToken({
            key: agent.key,
            issuer: `${TEST_ISSUER}-other`,
            subject: 'usr_test',
            sandboxId: agent.ctx.sandboxId,
            scopes: ['shell:ro'],
            ttlSeconds: 60,
          }).token
        }`,
    ],
    ['not a JWT', () => 'Bearer abc.def'],
    ['empty', () => ''],
    ['of another scheme', () => 'Basic dXNlcjpwYXNz'],
  ])('refuses a credential %s with the 401 envelope, not the liveness body', async (_name, header) => {
    const res = await healthz(header());
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({
      error: { code: 'UNAUTHENTICATED', retryable: false, request_id: expect.any(String) },
    });
    expect(text).not.toContain(agent.ctx.sandboxId);
  });
});
