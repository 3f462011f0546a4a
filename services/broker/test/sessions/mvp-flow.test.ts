// The MVP client's whole life (docs/protocol.md#mvp-routes): ensure → get → refresh →
// release, reading only the MVP fields, with the token checked the way the
// sandbox's agent checks it.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { MvpRefreshResponse, MvpSessionResponse, SessionResponse } from '@sbx/protocol';
import { createVerifier } from '@sbx/tokens';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('MVP session flow', (backend) => {
  const broker = useBroker(backend);
  let key: string;

  beforeAll(async () => {
    key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
  });

  const api = () => request(broker.url);
  const verifierFor = (sandboxId: string) => {
    const spec = broker.provider.specOf(sandboxId);
    if (spec === undefined) throw new Error(`the provider never created ${sandboxId}`);
    return createVerifier({
      keys: spec.signingKey,
      issuer: spec.tokenIssuer,
      audience: sandboxId,
      maxTtlSeconds: 3600,
    });
  };

  it('ensures a session whose MVP fields name a distinct session, the thread and a reachable sandbox', async () => {
    const threadId = `thr_${randomUUID()}`;
    const res = await api()
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: threadId, mode: 'ensure' });
    expect(res.status).toBe(200);
    const session = MvpSessionResponse.parse(res.body);
    expect(SessionResponse.safeParse(res.body).success).toBe(true);
    expect(session.thread_id).toBe(threadId);
    expect(session.session_id).toMatch(/^ssn_/);
    expect(session.sandbox.id).toMatch(/^sb_/);
    expect(session.sandbox.provider).toBe('fake');
    expect(session.sandbox.http_base_url).toMatch(/^http:\/\/fake-\d+\.sandbox\.invalid$/);
    expect(session.sandbox.ws_base_url).toBe(session.sandbox.http_base_url.replace(/^http/, 'ws'));

    const verified = verifierFor(session.sandbox.id).verify(session.token);
    expect(verified.claims).toMatchObject({ session_id: session.session_id, thread_id: threadId });
    expect(verified.scopes).toEqual(['fs:rw']); // a human without attach:sandbox gets no shell
    expect(verified.expiresAt.toISOString()).toBe(new Date(session.expires_at).toISOString());
    expect(verified.claims.exp - verified.claims.iat).toBe(900);
  });

  it('gets the same session with mode=get, refreshes it, releases it, and then it is gone', async () => {
    const threadId = `thr_${randomUUID()}`;
    const sessions = () => api().post('/v1/sandbox/sessions').set(bearer(key));
    const missing = await sessions().send({ thread_id: threadId, mode: 'get' });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: 'SESSION_NOT_FOUND', request_id: expect.any(String) });

    const created = MvpSessionResponse.parse(
      (await sessions().send({ thread_id: threadId, mode: 'ensure' })).body,
    );
    const got = MvpSessionResponse.parse((await sessions().send({ thread_id: threadId, mode: 'get' })).body);
    expect(got.session_id).toBe(created.session_id);
    expect(got.sandbox).toEqual(created.sandbox);

    const refresh = await api()
      .post(`/v1/sandbox/sessions/${created.session_id}/refresh`)
      .set(bearer(key))
      .send({});
    expect(refresh.status).toBe(200);
    const refreshed = MvpRefreshResponse.parse(refresh.body);
    expect(refreshed.token).not.toBe(created.token);
    expect(verifierFor(created.sandbox.id).verify(refreshed.token).claims.session_id).toBe(
      created.session_id,
    );

    const release = await api().delete(`/v1/sandbox/sessions/${created.session_id}`).set(bearer(key));
    expect(release.status).toBe(204);
    expect(broker.provider.calls('destroy')).toContain(created.sandbox.id);

    const again = await api()
      .post(`/v1/sandbox/sessions/${created.session_id}/refresh`)
      .set(bearer(key))
      .send({});
    expect(again.status).toBe(410);
    expect(again.body.error.code).toBe('SESSION_EXPIRED');
    const gone = await sessions().send({ thread_id: threadId, mode: 'get' });
    expect(gone.body.error.code).toBe('SESSION_NOT_FOUND');
    // Debug logging is on in the harness; no token ever reaches the log.
    const logs = broker.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const token of [created.token, got.token, refreshed.token]) expect(logs).not.toContain(token);
    const unknown = await api().post('/v1/sandbox/sessions/ssn_nope/refresh').set(bearer(key)).send({});
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SESSION_NOT_FOUND');
  });
});
