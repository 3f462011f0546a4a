// The audit trail (one row per operation, refusals included, each with its
// request id) and per-principal rate limits (429 with Retry-After), counted
// in the shared coordination store.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { SessionResponse } from '@sbx/protocol';
import { createCoordination } from '../../src/adapters/redis/create-coordination.js';
import { isRedisReachable, TEST_REDIS_URL } from '../redis/coordination-harness.js';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import type { FakeProvider } from '../../src/providers/fake-provider.js';
import { bearer, type BrokerHarness } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('audit and rate limits', (backend) => {
  const broker = useBroker(backend);
  const db = () => broker.database;
  let redis: Coordination;
  let limited: [BrokerHarness<FakeProvider>, BrokerHarness<FakeProvider>];

  beforeAll(async () => {
    // Two broker instances counting in one Redis; without Redis (outside CI) they share one
    // in-process store, which still proves the count is per principal across both.
    const useRedis = process.env['CI'] === 'true' || (await isRedisReachable(TEST_REDIS_URL));
    redis = await createCoordination({
      redisUrl: useRedis ? TEST_REDIS_URL : undefined,
      keyPrefix: `test-${randomUUID()}`,
    });
    const rateLimits = { perWindow: { negotiate: 3, session: 100 }, windowMs: 60_000 };
    // Closed by the fixture after these tests, before the afterAll below closes their Redis.
    limited = [
      await broker.instance({ coordination: redis, rateLimits }),
      await broker.instance({ coordination: redis, rateLimits }),
    ];
  });
  afterAll(async () => {
    await redis.close();
  });

  it('writes one row per operation with request id, caller, actor, scope, session, sandbox, jti and scopes', async () => {
    const key = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      principalType: 'user',
      principalId: 'usr_audited',
    });
    const threadId = `thr_${randomUUID()}`;
    const ensured = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .set('X-Request-Id', 'req_audit_ensure')
      .send({ thread_id: threadId, mode: 'ensure' });
    const session = SessionResponse.parse(ensured.body);
    const one = `/v1/sandbox/sessions/${session.session_id}`;
    await request(broker.url)
      .post(`${one}/refresh`)
      .set(bearer(key))
      .set('X-Request-Id', 'req_audit_refresh')
      .send({});
    await request(broker.url)
      .post(`${one}/heartbeat`)
      .set(bearer(key))
      .set('X-Request-Id', 'req_audit_beat')
      .send({});
    await request(broker.url).delete(one).set(bearer(key)).set('X-Request-Id', 'req_audit_release');

    const rows = await broker.repositories.audit.listBySandbox(session.sandbox.id);
    const byAction = (action: string, requestId: string) =>
      rows.filter((row) => row.action === action && row.requestId === requestId);
    const negotiated = byAction('session.negotiate', 'req_audit_ensure');
    expect(negotiated).toHaveLength(1);
    expect(negotiated[0]).toMatchObject({
      outcome: 'ok',
      tenantId: broker.tenantId,
      callerId: 'usr_audited',
      callerType: 'user',
      actorType: 'human',
      actorId: 'usr_audited',
      scopeType: 'thread',
      scopeId: threadId,
      sessionId: session.session_id,
      sandboxId: session.sandbox.id,
      jti: expect.stringMatching(/^tok_/),
      scopes: ['fs:rw'],
    });
    for (const [action, requestId] of [
      ['sandbox.provisioning', 'req_audit_ensure'],
      ['sandbox.active', 'req_audit_ensure'],
      ['token.issue', 'req_audit_ensure'],
      ['session.refresh', 'req_audit_refresh'],
      ['token.issue', 'req_audit_refresh'],
      ['session.heartbeat', 'req_audit_beat'],
      ['session.release', 'req_audit_release'],
      ['sandbox.terminated', 'req_audit_release'],
      ['sandbox.destroy', 'req_audit_release'],
    ] as const) {
      expect([action, byAction(action, requestId).length]).toEqual([action, 1]);
    }
    // The token row names the jti the token carries.
    const issued = byAction('token.issue', 'req_audit_refresh')[0]!;
    expect(await db().prisma.tokenIssuance.findUnique({ where: { jti: issued.jti! } })).not.toBeNull();
  });

  it('audits refusals with their error code', async () => {
    const key = await broker.apiKey({ scopes: ['write:sandbox'], principalType: 'agent' });
    const threadId = `thr_${randomUUID()}`;
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .set('X-Request-Id', 'req_audit_denied')
      .send({ scope: { type: 'thread', id: threadId }, mode: 'ensure', requested_capabilities: ['shell'] });
    expect(res.status).toBe(403);
    const rows = await db().prisma.auditEvent.findMany({ where: { requestId: 'req_audit_denied' } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      action: 'session.negotiate',
      outcome: 'CAPABILITY_DENIED',
      scopeId: threadId,
      actorType: 'agent',
    });
  });

  it('limits negotiations per principal across instances: 429 with Retry-After, others unaffected', async () => {
    const [one, two] = limited;
    const key = await one.apiKey({ scopes: ['write:sandbox'], principalType: 'user' });
    const other = await one.apiKey({ scopes: ['write:sandbox'], principalType: 'user' });
    const ensure = (harness: BrokerHarness<FakeProvider>, apiKey: string) =>
      request(harness.url)
        .post('/v1/sandbox/sessions')
        .set(bearer(apiKey))
        .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
    expect((await ensure(one, key)).status).toBe(200);
    expect((await ensure(two, key)).status).toBe(200);
    expect((await ensure(one, key)).status).toBe(200);
    for (const harness of [two, one]) {
      const refused = await ensure(harness, key);
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    expect((await ensure(two, other)).status).toBe(200);
    const audited = await db().prisma.auditEvent.count({
      where: { tenantId: one.tenantId, outcome: 'RATE_LIMITED' },
    });
    expect(audited).toBe(1); // the first refusal of the window, not every one
  });
});
