// One failure, one domain error, several names on the wire. The domain speaks
// bindings (BINDING_NOT_FOUND, BINDING_CONFLICT); the MVP routes rename those
// two to SESSION_NOT_FOUND / SESSION_CONFLICT at the HTTP edge, and nothing
// else changes: same status, same message, same headers, same bytes but the code.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { SbxError } from '@sbx/protocol';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import { MVP_ERROR_CODES, toMvpError } from '../../src/http/sessions/mvp-error-codes.js';
import { bearer, startBrokerHarness, type BrokerHarness } from '../support/broker-harness.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';

describe('MVP error codes', () => {
  it('renames exactly the two binding errors and keeps message, details and Retry-After', () => {
    expect(MVP_ERROR_CODES).toEqual({
      BINDING_NOT_FOUND: 'SESSION_NOT_FOUND',
      BINDING_CONFLICT: 'SESSION_CONFLICT',
    });
    const original = new SbxError('BINDING_CONFLICT', 'taken', {
      details: { constraint: 'x' },
      retryAfterSeconds: 3,
    });
    const renamed = toMvpError(original);
    expect(renamed).toBeInstanceOf(SbxError);
    expect(renamed).toMatchObject({
      code: 'SESSION_CONFLICT',
      message: 'taken',
      status: 409,
      retryable: false,
      details: { constraint: 'x' },
      retryAfterSeconds: 3,
      cause: original,
    });
  });

  it('passes every other error through as the same object', () => {
    for (const err of [
      new SbxError('SESSION_EXPIRED', 'gone'),
      new SbxError('SANDBOX_STARTING', 'wait', { retryAfterSeconds: 2 }),
      new SbxError('SESSION_NOT_FOUND', 'already an MVP name'),
      new Error('not ours'),
      'a string',
    ]) {
      expect(toMvpError(err)).toBe(err);
    }
  });
});

describeEachBackend('error vocabulary per route family', (backend) => {
  const db = useTestDatabase(backend);
  let broker: BrokerHarness<FakeProvider>;
  let key: string;

  beforeAll(async () => {
    broker = await startBrokerHarness({ database: db(), provider: new FakeProvider() });
    key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
  });
  afterAll(async () => {
    await broker.close();
    await broker.provider.close();
  });

  /** The same request id on both calls, so the two bodies may differ in the code alone. */
  const call = (requestId: string) => ({
    negotiate: (body: object) =>
      request(broker.url)
        .post('/v1/sandbox/sessions')
        .set(bearer(key))
        .set('X-Request-Id', requestId)
        .send(body),
    post: (path: string) =>
      request(broker.url).post(path).set(bearer(key)).set('X-Request-Id', requestId).send({}),
  });

  /** `mvp` is `full` with its code renamed: status, headers and every other byte agree. */
  const expectSameFailure = (
    mvp: request.Response,
    full: request.Response,
    codes: readonly [mvpCode: string, fullCode: string],
  ) => {
    const [mvpCode, fullCode] = codes;
    expect(full.body.error.code).toBe(fullCode);
    expect(mvp.body.error.code).toBe(mvpCode);
    expect(mvp.status).toBe(full.status);
    expect(mvp.headers['retry-after']).toBe(full.headers['retry-after']);
    expect(mvp.text).toBe(full.text.replace(`"code":"${fullCode}"`, `"code":"${mvpCode}"`));
  };

  it('an unknown session id: SESSION_NOT_FOUND on /refresh, BINDING_NOT_FOUND on /refresh-token', async () => {
    const { post } = call(`req_${randomUUID()}`);
    const one = `/v1/sandbox/sessions/ssn_${randomUUID()}`;
    const mvp = await post(`${one}/refresh`);
    const full = await post(`${one}/refresh-token`);
    expect(full.status).toBe(404);
    expectSameFailure(mvp, full, ['SESSION_NOT_FOUND', 'BINDING_NOT_FOUND']);
    // The other by-id routes of each family agree with their own.
    const heartbeat = await post(`${one}/heartbeat`);
    expect(heartbeat.body.error.code).toBe('BINDING_NOT_FOUND');
    const get = await request(broker.url).get(one).set(bearer(key));
    const release = await request(broker.url).delete(one).set(bearer(key));
    for (const res of [get, release]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('SESSION_NOT_FOUND');
    }
  });

  it('a thread without a sandbox: MVP get, full attach_only and the thread routes', async () => {
    const threadId = `thr_${randomUUID()}`;
    const { negotiate } = call(`req_${randomUUID()}`);
    const mvp = await negotiate({ thread_id: threadId, mode: 'get' });
    const full = await negotiate({ scope: { type: 'thread', id: threadId }, mode: 'attach_only' });
    expect(full.status).toBe(404);
    expectSameFailure(mvp, full, ['SESSION_NOT_FOUND', 'BINDING_NOT_FOUND']);
    const thread = await request(broker.url).delete(`/threads/${threadId}/sandbox`).set(bearer(key));
    expect(thread.status).toBe(404);
    expect(thread.body.error.code).toBe('BINDING_NOT_FOUND');
  });

  it('a thread that already has a sandbox: create_only is SESSION_CONFLICT or BINDING_CONFLICT', async () => {
    const threadId = `thr_${randomUUID()}`;
    const { negotiate } = call(`req_${randomUUID()}`);
    expect((await negotiate({ thread_id: threadId, mode: 'ensure' })).status).toBe(200);
    const mvp = await negotiate({ thread_id: threadId, mode: 'create_only' });
    const full = await negotiate({ scope: { type: 'thread', id: threadId }, mode: 'create_only' });
    expect(full.status).toBe(409);
    expectSameFailure(mvp, full, ['SESSION_CONFLICT', 'BINDING_CONFLICT']);
    // Under an Idempotency-Key too (the guard sees the renamed error and stores nothing).
    const keyed = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .set('Idempotency-Key', randomUUID())
      .send({ thread_id: threadId, mode: 'create_only' });
    expect(keyed.status).toBe(409);
    expect(keyed.body.error.code).toBe('SESSION_CONFLICT');
  });

  it('codes both families share leave every route unchanged (410 SESSION_EXPIRED)', async () => {
    const { negotiate, post } = call(`req_${randomUUID()}`);
    const created = await negotiate({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
    const sessionId: unknown = created.body.session_id;
    if (typeof sessionId !== 'string') throw new Error('the MVP answer names no session_id');
    const one = `/v1/sandbox/sessions/${sessionId}`;
    expect((await request(broker.url).delete(one).set(bearer(key))).status).toBe(204);
    const mvp = await post(`${one}/refresh`);
    const full = await post(`${one}/refresh-token`);
    expect(full.status).toBe(410);
    expectSameFailure(mvp, full, ['SESSION_EXPIRED', 'SESSION_EXPIRED']);
  });
});
