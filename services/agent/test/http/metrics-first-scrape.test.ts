// The agent's counters start before anyone reads them: the first scrape of /metrics
// (when the exposition is first built) reports everything counted since the start.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

const OPERATOR = 'operator-metrics-token-4567';

/** The value of one sample line of the exposition text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe('agent /metrics: the first scrape', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startTestAgent({ metricsToken: OPERATOR });
  });
  afterAll(async () => agent.close());

  it('reports the refused credentials and bytes counted before it', async () => {
    const info = (authorization?: string): Promise<Response> =>
      fetch(`${agent.httpUrl}/v1/info`, authorization === undefined ? {} : { headers: { authorization } });
    for (const authorization of [undefined, undefined, 'Bearer not-a-token'])
      expect((await info(authorization)).status).toBe(401);

    const res = await fetch(`${agent.httpUrl}/metrics`, { headers: { authorization: `Bearer ${OPERATOR}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(sample(text, 'sbx_agent_auth_failures_total', { reason: 'missing' })).toBe(2);
    expect(sample(text, 'sbx_agent_auth_failures_total', { reason: 'malformed' })).toBe(1);
    expect(sample(text, 'sbx_agent_http_bytes_total', { direction: 'out' })).toBeGreaterThan(0);
  });
});
