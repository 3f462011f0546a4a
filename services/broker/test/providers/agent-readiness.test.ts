import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { createVerifier, SigningKey } from '@sbx/tokens';
import { inspectAgent } from '../../src/providers/agent-inspection.js';
import {
  dataplaneOf,
  isHealthy,
  readinessToken,
  waitUntilHealthy,
} from '../../src/providers/agent-readiness.js';
import { startTestAgent, TEST_ISSUER, type TestAgent } from '../../../agent/test/support/agent-harness.js';

/** Two real agents (services/agent, on port 0), each with its own sandbox id and key. */
describe('agent readiness against real agents', () => {
  let mine: TestAgent;
  let other: TestAgent;
  beforeAll(async () => {
    [mine, other] = await Promise.all([startTestAgent(), startTestAgent()]);
  });
  afterAll(async () => Promise.all([mine.close(), other.close()]));

  const tokenOf = (agent: TestAgent) => () => readinessToken(agent.key, agent.ctx.sandboxId, TEST_ISSUER);

  it('mints a 60 s token for one sandbox that grants shell:ro and nothing else', () => {
    const token = readinessToken(mine.key, mine.ctx.sandboxId, TEST_ISSUER);
    const verified = createVerifier({
      keys: mine.key,
      issuer: TEST_ISSUER,
      audience: mine.ctx.sandboxId,
      maxTtlSeconds: 60,
    }).verify(token);
    expect(verified.scopes).toEqual(['shell:ro']);
    expect(verified.claims.exp - verified.claims.iat).toBe(60);
    expect(verified.claims.sub).toBe('sbx-broker:readiness');
  });

  it('is healthy when the agent accepts the readiness token and names this sandbox', async () => {
    expect(await isHealthy(mine.httpUrl, mine.ctx.sandboxId, 1000, tokenOf(mine))).toBe(true);
    const logged = mine.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({ route: '/healthz', status: 200, sub: 'sbx-broker:readiness' }),
    );
  });

  it('is not healthy when another sandbox’s agent holds the port and refuses the token', async () => {
    expect(await isHealthy(other.httpUrl, mine.ctx.sandboxId, 1000, tokenOf(mine))).toBe(false);
  });

  it('is not healthy when the agent that answers names another sandbox', async () => {
    // The token is good for the agent on the port, but that agent is not this sandbox's.
    expect(await isHealthy(other.httpUrl, mine.ctx.sandboxId, 1000, tokenOf(other))).toBe(false);
  });

  it('is not healthy with a token signed by another key', async () => {
    const forged = () => readinessToken(SigningKey.generate(), mine.ctx.sandboxId, TEST_ISSUER);
    expect(await isHealthy(mine.httpUrl, mine.ctx.sandboxId, 1000, forged)).toBe(false);
  });

  it('lets a failure to mint the token surface instead of reading as an unhealthy agent', async () => {
    const broken = (): string => {
      throw new Error('no signing key');
    };
    await expect(isHealthy(mine.httpUrl, mine.ctx.sandboxId, 1000, broken)).rejects.toThrow('no signing key');
  });

  it('waits for its own agent and gives up on an impostor at the deadline, with a fresh token per poll', async () => {
    await waitUntilHealthy(mine.httpUrl, mine.ctx.sandboxId, Date.now() + 5000, () => false, tokenOf(mine));
    let minted = 0;
    const counting = (): string => {
      minted += 1;
      return tokenOf(mine)();
    };
    await expect(
      waitUntilHealthy(other.httpUrl, mine.ctx.sandboxId, Date.now() + 300, () => false, counting),
    ).rejects.toThrow(/did not pass its health check in time/);
    expect(minted).toBeGreaterThan(1);
  });

  // Found by reliability/load: fetch's global dispatcher (undici) keeps a connection pool per
  // origin for the life of the process, and each agent is an origin of its own (its port):
  // the broker's heap grew by ~25 KiB per sandbox it ever probed. Probes use node:http.
  it('probes and inspects agents without the global fetch', async () => {
    const probe = jest.spyOn(globalThis, 'fetch');
    try {
      expect(await isHealthy(mine.httpUrl, mine.ctx.sandboxId, 1000, tokenOf(mine))).toBe(true);
      const live = { dataplane: dataplaneOf(mine.httpUrl, '/workspace'), bearer: tokenOf(mine) };
      expect((await inspectAgent(mine.ctx.sandboxId, live))?.bootId).toEqual(expect.any(String));
      expect(probe).not.toHaveBeenCalled();
    } finally {
      probe.mockRestore();
    }
  });

  it('is not healthy when nothing answers within the timeout', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      expect(await isHealthy(`http://127.0.0.1:${port}`, mine.ctx.sandboxId, 200, tokenOf(mine))).toBe(false);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
