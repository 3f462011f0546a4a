// GET /metrics on the agent: never anonymous; refused credentials counted by
// reason; shells/processes gauges from the features' counters; bytes moved.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SigningKey } from '@sbx/tokens';
import type { AgentFeature } from '../../src/agent-context.js';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';

const OPERATOR = 'operator-metrics-token-0123';

function countingFeature(): AgentFeature {
  return { name: 'counting', stats: () => ({ shells: 2, processes: 3, watchers: 1 }) };
}

/** The value of one sample line of the exposition text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe('agent /metrics', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startTestAgent({ features: () => [countingFeature()], metricsToken: OPERATOR });
  });
  afterAll(async () => agent.close());

  const get = (path: string, token?: string): Promise<Response> =>
    fetch(
      `${agent.httpUrl}${path}`,
      token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
    );
  const scrape = async (): Promise<string> => {
    const res = await get('/metrics', OPERATOR);
    expect(res.status).toBe(200);
    return res.text();
  };

  it('refuses anonymous callers and strangers', async () => {
    const anonymous = await get('/metrics');
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain('sbx_agent');
    expect((await get('/metrics', 'not-the-operator-token-0000')).status).toBe(401);
  });

  it("answers the operator's token and a capability token of this sandbox", async () => {
    const res = await get('/metrics', agent.token(['fs:ro']));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await scrape();
    expect(sample(text, 'sbx_agent_shells')).toBe(2);
    expect(sample(text, 'sbx_agent_processes')).toBe(3);
    expect(sample(text, 'sbx_agent_feature_stat', { name: 'watchers' })).toBe(1);
    expect(sample(text, 'sbx_agent_http_bytes_total', { direction: 'out' })).toBeGreaterThan(0);
  });

  it('counts refused credentials by reason', async () => {
    const before = await scrape();
    const reasons = ['missing', 'malformed', 'bad_signature', 'expired', 'wrong_audience'];
    const was = Object.fromEntries(
      reasons.map((reason) => [reason, sample(before, 'sbx_agent_auth_failures_total', { reason })]),
    );
    expect((await get('/v1/info')).status).toBe(401);
    expect((await get('/v1/info', 'not a token')).status).toBe(401);
    const stranger = SigningKey.generate();
    expect((await get('/v1/info', agent.token(['fs:ro'], { key: stranger }))).status).toBe(401);
    const expired = agent.token(['fs:ro'], { ttlSeconds: 60, issuedSecondsAgo: 3600 });
    expect((await get('/v1/info', expired)).status).toBe(401);
    expect((await get('/v1/info', agent.token(['fs:ro'], { sandboxId: 'sb_other' }))).status).toBe(401);

    const after = await scrape();
    for (const reason of reasons)
      expect([
        reason,
        sample(after, 'sbx_agent_auth_failures_total', { reason }) - (was[reason] ?? 0),
      ]).toEqual([reason, 1]);
  });
});

describe('agent /metrics with WebSocket streams', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx)], metricsToken: OPERATOR });
  });
  afterAll(async () => agent.close());

  /** Bytes out so far, less what the scrapes themselves sent (each is counted by the next one). */
  let scraped = 0;
  const bytesOut = async (): Promise<number> => {
    const res = await fetch(`${agent.httpUrl}/metrics`, { headers: { authorization: `Bearer ${OPERATOR}` } });
    const text = await res.text();
    const value = sample(text, 'sbx_agent_http_bytes_total', { direction: 'out' }) - scraped;
    scraped += Buffer.byteLength(text) + 1024;
    return value;
  };

  it('counts the bytes of WebSocket streams too, not only HTTP exchanges', async () => {
    const before = await bytesOut();
    const socket = await TestSocket.authed(`${agent.wsUrl}/v1/exec/ws`, agent.token(['process']));
    socket.send({ type: 'start', cmd: 'head -c 300000 /dev/zero' });
    await socket.next((frame) => frame['type'] === 'exit');
    await socket.closed;
    // The count is taken when the server side of the socket closes: wait for it.
    const deadline = Date.now() + 10_000;
    while ((await bytesOut()) - before < 300_000 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await bytesOut()) - before).toBeGreaterThanOrEqual(300_000);
  });
});
