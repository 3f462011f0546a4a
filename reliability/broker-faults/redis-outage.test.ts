// Redis goes away under two broker replicas (SIGKILL of the suite's own redis-server) and
// comes back empty, as after a crash without persistence. While it is away every request
// is answered as before and fast: far under the Redis command timeout a request used to
// wait out once per Redis call (resilient-coordination.ts), rate limits count per process,
// and a sandbox-wide key rotation still completes. Once Redis is back, both replicas say
// so on /readyz, the rotation reaches the replica that had the old key cached, and neither
// takes the other for dead because their presence keys were lost with Redis (which would
// suspend a live sandbox under its host). Long form: more requests and more outages.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { until } from '../../services/broker/test/support/until.js';
import type { BrokerProcess } from '../../services/broker/test/process/broker-process.js';
import { field, LONG, text, useDeployment, type Answer, type Deployment } from './fault-kit.js';

/** The brokers' Redis command timeout: long, so that a request waiting on it once stands out. */
const REDIS_TIMEOUT_MS = 20_000;
/** Half of it: a request faster than this waited on no Redis command timeout. */
const FAST_MS = REDIS_TIMEOUT_MS / 2;
const NEGOTIATE_LIMIT = 40;
const OUTAGES = LONG ? 3 : 1;
const ROUNDS = LONG ? 20 : 3;

describe('two broker replicas while Redis is away and after it returns', () => {
  const deployment = useDeployment({
    redis: true,
    env: {
      RECONCILE_INTERVAL_MS: '1000',
      REAPER_INTERVAL_MS: '1000',
      BROKER_PRESENCE_TTL_MS: '3000',
      RATE_LIMIT_NEGOTIATE_PER_MINUTE: String(NEGOTIATE_LIMIT),
      REDIS_COMMAND_TIMEOUT_MS: String(REDIS_TIMEOUT_MS),
    },
  });
  const thread = `thr_redis_${randomBytes(4).toString('hex')}`;

  const ensure = (d: Deployment, broker: BrokerProcess, threadId = thread): Promise<Answer> =>
    d.call(broker, 'POST', '/v1/sandbox/sessions', { thread_id: threadId, mode: 'ensure' });

  /** The everyday requests of a holder and an operator, each answered 200 and fast. */
  async function everyday(d: Deployment, broker: BrokerProcess, sessionId: string, sandboxId: string) {
    const answers: [string, Answer][] = [
      ['ensure', await ensure(d, broker)],
      ['get', await d.call(broker, 'GET', `/v1/sandbox/sessions/${sessionId}`)],
      ['heartbeat', await d.call(broker, 'POST', `/v1/sandbox/sessions/${sessionId}/heartbeat`, {})],
      ['refresh', await d.call(broker, 'POST', `/v1/sandbox/sessions/${sessionId}/refresh-token`, {})],
      ['command', await d.call(broker, 'POST', `/v1/sandboxes/${sandboxId}/commands`, { cmd: 'echo up' })],
      ['admin list', await d.call(broker, 'GET', '/admin/sandboxes')],
      ['whoami', await d.call(broker, 'GET', '/v1/whoami')],
    ];
    for (const [name, answer] of answers) {
      expect({ name, status: answer.status }).toEqual({ name, status: 200 });
      expect({ name, fast: answer.ms < FAST_MS }).toEqual({ name, fast: true });
    }
  }

  /** Runs a command in the sandbox through the agent itself, with a token minted by `broker`. */
  async function execAtAgent(d: Deployment, broker: BrokerProcess): Promise<number> {
    const session = await ensure(d, broker);
    expect(session.status).toBe(200);
    const res = await fetch(`${text(session, 'sandbox', 'http_base_url')}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${text(session, 'token')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: 'true', timeout_ms: 10_000 }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  it('serves fast without Redis, per-process limits, and recovers without a takeover', async () => {
    const d = deployment();
    const [a, b] = d.brokers as [BrokerProcess, BrokerProcess];
    const redis = d.redis!;
    const created = await ensure(d, a);
    expect(created.status).toBe(200);
    const sandboxId = text(created, 'sandbox', 'id');
    const sessionId = text(created, 'session_id');
    // b caches the sandbox's signing key as it mints a token.
    expect(await execAtAgent(d, b)).toBe(200);

    for (let outage = 0; outage < OUTAGES; outage += 1) {
      const marks = [a.output().length, b.output().length];
      await redis.stop();
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const broker of [a, b]) await everyday(d, broker, sessionId, sandboxId);
      }
      for (const broker of [a, b]) {
        const ready = await d.call(broker, 'GET', '/readyz');
        expect(ready.status).toBe(200);
        expect(ready.body).toMatchObject({ status: 'degraded', checks: { coordination: 'degraded' } });
      }

      // Limits count in each process: a refuses past its own count, b still has its own.
      const other = `thr_limit_${outage}_${randomBytes(3).toString('hex')}`;
      let refused: Answer | undefined;
      for (let i = 0; i <= NEGOTIATE_LIMIT + 1 && refused === undefined; i += 1) {
        const answer = await ensure(d, a, other);
        expect(answer.ms).toBeLessThan(FAST_MS);
        expect([200, 429]).toContain(answer.status);
        if (answer.status === 429) refused = answer;
      }
      expect(field(refused?.body, 'error', 'code')).toBe('RATE_LIMITED');
      expect((await ensure(d, b, other)).status).toBe(200);

      // A sandbox-wide rotation completes; b hears of it once Redis is back.
      const rotation = await d.call(a, 'POST', '/admin/revocations', { sandbox_id: sandboxId });
      expect(rotation.status).toBe(200);
      expect(rotation.ms).toBeLessThan(FAST_MS);

      await redis.start();
      await until(
        () => [a, b].every((broker, i) => broker.output().slice(marks[i]).includes('reachable again')),
        'both replicas to find Redis again',
      );
      for (const broker of [a, b]) {
        await until(async () => {
          const ready = await d.call(broker, 'GET', '/readyz');
          return ready.status === 200 && field(ready.body, 'status') === 'ok';
        }, 'readiness without degradation');
      }
      await until(async () => (await execAtAgent(d, b)) === 200, 'a token of b with the rotated key');
      expect(await execAtAgent(d, a)).toBe(200);

      // Presence keys were lost with Redis: rounds of both reconcilers, and nobody took over.
      const rounds = (broker: BrokerProcess, mark: number): number =>
        broker.output().slice(mark).split('"msg":"reconciliation done"').length - 1;
      const after = [a.output().length, b.output().length];
      await until(
        () => rounds(a, after[0]!) + rounds(b, after[1]!) >= 6,
        'six reconciler rounds after Redis came back',
        100,
      );
      const row = await d.db.prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId } });
      expect(row.state).toBe('active');
      const takeovers = await d.db.prisma.auditEvent.count({
        where: { sandboxId, action: 'sandbox.state', callerId: 'reconciler' },
      });
      expect(takeovers).toBe(0);
      await everyday(d, a, sessionId, sandboxId);
      await everyday(d, b, sessionId, sandboxId);
    }
  });
});
