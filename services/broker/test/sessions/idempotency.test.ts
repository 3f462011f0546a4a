// Idempotency-Key on negotiation: the same key and body replay the first
// answer exactly; the same key with another body is 422; a failure stores
// nothing; concurrent duplicates run once; keys belong to their principal.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { requestFingerprint } from '../../src/domain/idempotency/request-fingerprint.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('Idempotency-Key', (backend) => {
  const broker = useBroker(backend);
  const db = () => broker.database;
  let key: string;

  beforeAll(async () => {
    key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
  });

  const ensure = (idempotencyKey: string, body: object, apiKey = key) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(apiKey))
      .set('Idempotency-Key', idempotencyKey)
      .send(body);

  it('replays the first answer, token included, for the same key and body', async () => {
    const idem = randomUUID();
    const body = { thread_id: `thr_${randomUUID()}`, mode: 'ensure' };
    const first = await ensure(idem, body);
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // Same body with its keys in another order is the same request.
    const replay = await ensure(idem, { mode: body.mode, thread_id: body.thread_id });
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    const issued = await db().prisma.tokenIssuance.count({ where: { sessionId: first.body.session_id } });
    expect(issued).toBe(1);
    // Stored encrypted: the row does not contain the token.
    const row = await db().prisma.idempotencyRecord.findFirstOrThrow({ where: { key: idem } });
    expect(Buffer.from(row.responseCipher!).toString('latin1')).not.toContain(first.body.token);
  });

  it('refuses the same key with another body (422) and keeps keys per principal', async () => {
    const idem = randomUUID();
    await ensure(idem, { thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
    const reused = await ensure(idem, { thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const other = await broker.apiKey({ scopes: ['write:sandbox'], principalType: 'user' });
    const theirs = await ensure(idem, { thread_id: `thr_${randomUUID()}`, mode: 'ensure' }, other);
    expect(theirs.status).toBe(200);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
  });

  it('stores no failure: a retry with the same key runs again', async () => {
    const idem = randomUUID();
    const body = { thread_id: `thr_${randomUUID()}`, mode: 'ensure' };
    broker.provider.failNext('create');
    expect((await ensure(idem, body)).status).toBe(503);
    const retry = await ensure(idem, body);
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
  });

  it('runs concurrent duplicates once; the others replay its answer', async () => {
    const idem = randomUUID();
    const body = { thread_id: `thr_${randomUUID()}`, mode: 'ensure' };
    const creates = broker.provider.calls('create').length;
    const responses = await Promise.all(Array.from({ length: 8 }, () => ensure(idem, body)));
    for (const res of responses) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual(responses[0]!.body);
    }
    expect(responses.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(7);
    expect(broker.provider.calls('create').length - creates).toBe(1);
  });

  it('applies to the thread route and rejects a malformed key', async () => {
    const idem = randomUUID();
    const threadId = `thr_${randomUUID()}`;
    const open = () =>
      request(broker.url)
        .post(`/threads/${threadId}/sandbox`)
        .set(bearer(key))
        .set('Idempotency-Key', idem)
        .send({ scopes: ['fs:rw'] });
    const first = await open();
    const replay = await open();
    expect(replay.body).toEqual(first.body);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const bad = await ensure('has spaces in it', { thread_id: threadId, mode: 'get' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('Idempotency-Key');
  });

  // A broker killed mid-request leaves its claim unfinished. A retry on another replica used to
  // wait 10 s and get 409 for the claim's whole 2 minutes; once the holder's presence is gone
  // (reliability/broker-faults/broker-kill.test.ts), the retry takes the claim over and runs.
  it('takes over at once a claim whose broker instance is dead, and waits for a live one', async () => {
    // A principal of its own: the others' sandboxes count against the owner's share.
    const mine = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
    const body = { thread_id: `thr_${randomUUID()}`, mode: 'ensure' };
    const known = randomUUID();
    expect((await ensure(known, body, mine)).status).toBe(200);
    const { tenantId, principalId } = await db().prisma.idempotencyRecord.findFirstOrThrow({
      where: { key: known },
    });
    const unfinished = async (holderId: string): Promise<string> => {
      const idem = randomUUID();
      await db().prisma.idempotencyRecord.create({
        data: {
          tenantId,
          principalId,
          key: idem,
          requestHash: requestFingerprint('POST', '/v1/sandbox/sessions', body),
          holderId,
          expiresAt: new Date(Date.now() + 120_000),
        },
      });
      return idem;
    };

    const retried = await ensure(await unfinished('brk_killed'), body, mine);
    expect(retried.status).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.body.sandbox.id).toBeDefined();

    const ownClaim = await db().prisma.idempotencyRecord.findFirstOrThrow({ where: { key: known } });
    const live = await ensure(await unfinished(ownClaim.holderId!), body, mine);
    expect(live.status).toBe(409);
    expect(live.body.error.message).toContain('still in progress');
  }, 60_000);
});
