// Thread routes (docs/protocol.md#thread-routes): negotiate with scopes and ttl, refresh
// with the current token as proof of possession, heartbeat, release.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { ThreadHeartbeatResponse, ThreadRefreshResponse, ThreadSandboxResponse } from '@sbx/protocol';
import { createVerifier, mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';

describeEachBackend('thread routes', (backend) => {
  const broker = useBroker(backend);
  let human: string;
  let agent: string;

  beforeAll(async () => {
    await liftOwnerShare(broker.repositories, broker.tenantId); // each owner opens many threads
    const scopes = ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'];
    human = await broker.apiKey({ scopes, principalType: 'user', principalId: 'usr_dev' });
    // A delegated agent would share the owner; here a separate owner keeps its own sandbox.
    agent = await broker.apiKey({ scopes, principalType: 'agent' });
  });

  const path = (threadId: string, rest = '') => `/threads/${threadId}/sandbox${rest}`;
  const open = async (key: string, threadId: string, body: object = { scopes: ['fs:rw', 'shell'] }) => {
    const res = await request(broker.url).post(path(threadId)).set(bearer(key)).send(body);
    expect(res.status).toBe(200);
    return ThreadSandboxResponse.parse(res.body);
  };
  const seconds = (from: number, to: string) => Math.round((Date.parse(to) - from) / 1000);

  it('negotiates with the requested ttl, the granted scopes and a refresh margin', async () => {
    const threadId = `thr_${randomUUID()}`;
    const started = Date.now();
    const sandbox = await open(human, threadId, { scopes: ['fs:rw', 'shell', 'process'], ttl: 300 });
    expect(sandbox.sandbox_id).toMatch(/^sb_/);
    expect(sandbox.endpoints.http).toMatch(/^http:\/\//);
    expect(sandbox.endpoints.ws).toMatch(/^ws:\/\//);
    expect(sandbox.scopes).toEqual(['fs:rw', 'shell']); // a human gets no process
    expect(seconds(started, sandbox.expires_at)).toBeGreaterThanOrEqual(299);
    expect(seconds(started, sandbox.expires_at)).toBeLessThanOrEqual(301);
    expect(Date.parse(sandbox.expires_at) - Date.parse(sandbox.refresh_before)).toBe(60_000);
    const spec = broker.provider.specOf(sandbox.sandbox_id)!;
    const verified = createVerifier({
      keys: spec.signingKey,
      issuer: 'sbx-broker',
      audience: sandbox.sandbox_id,
      maxTtlSeconds: 900,
    }).verify(sandbox.token);
    expect(verified.claims).toMatchObject({ sub: 'usr_dev', thread_id: threadId });

    // The ttl is clamped to [60 s, the tenant's maximum of 900 s]; the margin is 20 % above 300 s.
    const short = await open(human, `thr_${randomUUID()}`, { scopes: ['fs:ro'], ttl: 5 });
    expect(seconds(Date.now(), short.expires_at)).toBeLessThanOrEqual(60);
    // Measured from just before this call: a loaded machine may take seconds to get here.
    const beforeLong = Date.now();
    const long = await open(human, `thr_${randomUUID()}`, { scopes: ['fs:ro'], ttl: 86_400 });
    expect(seconds(beforeLong, long.expires_at)).toBeLessThanOrEqual(901);
    expect(seconds(Date.now(), long.expires_at)).toBeGreaterThanOrEqual(890);
    expect(Date.parse(long.expires_at) - Date.parse(long.refresh_before)).toBe(180_000);

    // Negotiating again (with the sandbox id as a hint) finds the same sandbox.
    const again = await open(human, threadId, { sandbox_id: sandbox.sandbox_id, scopes: ['fs:rw'] });
    expect(again.sandbox_id).toBe(sandbox.sandbox_id);
  });

  it('refreshes with the current token as proof, keeping its lifetime', async () => {
    const threadId = `thr_${randomUUID()}`;
    const sandbox = await open(human, threadId, { scopes: ['fs:rw'], ttl: 120 });
    const res = await request(broker.url)
      .post(path(threadId, '/refresh'))
      .set(bearer(human))
      .send({ sandbox_id: sandbox.sandbox_id, current_token: sandbox.token });
    expect(res.status).toBe(200);
    const refreshed = ThreadRefreshResponse.parse(res.body);
    expect(refreshed.token).not.toBe(sandbox.token);
    expect(seconds(Date.now(), refreshed.expires_at)).toBeGreaterThan(110);
    expect(seconds(Date.now(), refreshed.expires_at)).toBeLessThanOrEqual(120);
  });

  it('refuses a refresh whose current token is malformed, forged or for another sandbox (401), or a stale sandbox id (409)', async () => {
    const threadId = `thr_${randomUUID()}`;
    const mine = await open(human, threadId);
    const otherThread = await open(human, `thr_${randomUUID()}`);
    const forged = mintCapabilityToken({
      key: SigningKey.generate(),
      issuer: 'sbx-broker',
      subject: 'usr_dev',
      sandboxId: mine.sandbox_id,
      scopes: ['fs:rw'],
      ttlSeconds: 300,
      threadId,
    }).token;
    const refresh = (body: object) =>
      request(broker.url).post(path(threadId, '/refresh')).set(bearer(human)).send(body);
    for (const token of ['not-a-token', otherThread.token, forged]) {
      const res = await refresh({ sandbox_id: mine.sandbox_id, current_token: token });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHENTICATED');
      expect(res.text).not.toContain(token);
    }
    const stale = await refresh({ sandbox_id: otherThread.sandbox_id, current_token: mine.token });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('BINDING_CONFLICT');
  });

  it("refuses another session's token for the same sandbox", async () => {
    const threadId = `thr_${randomUUID()}`;
    const service = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'attach:sandbox'],
      principalType: 'service',
    });
    const forHuman = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(service))
      .send({
        scope: { type: 'thread', id: threadId },
        mode: 'ensure',
        actor: { type: 'human', id: 'usr_x' },
      });
    const own = await open(service, threadId, { scopes: ['fs:rw'] });
    expect(own.sandbox_id).toBe(forHuman.body.sandbox.id);
    const res = await request(broker.url)
      .post(path(threadId, '/refresh'))
      .set(bearer(service))
      .send({ sandbox_id: own.sandbox_id, current_token: forHuman.body.token });
    expect(res.status).toBe(401);
    expect(res.body.error.message).toContain('not issued for this session');
  });

  it('accepts a token expired within the grace period as proof, not one expired longer', async () => {
    const threadId = `thr_${randomUUID()}`;
    const sandbox = await open(human, threadId, { scopes: ['fs:rw'] });
    const spec = broker.provider.specOf(sandbox.sandbox_id)!;
    const sessionId = createVerifier({
      keys: spec.signingKey,
      issuer: 'sbx-broker',
      audience: sandbox.sandbox_id,
      maxTtlSeconds: 900,
    }).verify(sandbox.token).claims.session_id!;
    const expiredAgo = (secondsAgo: number) =>
      mintCapabilityToken({
        key: spec.signingKey,
        issuer: 'sbx-broker',
        subject: 'usr_dev',
        sandboxId: sandbox.sandbox_id,
        scopes: ['fs:rw'],
        ttlSeconds: 300,
        sessionId,
        threadId,
        now: () => Date.now() - (300 + secondsAgo) * 1000,
      }).token;
    const refresh = (token: string) =>
      request(broker.url)
        .post(path(threadId, '/refresh'))
        .set(bearer(human))
        .send({ sandbox_id: sandbox.sandbox_id, current_token: token });
    expect((await refresh(expiredAgo(120))).status).toBe(200);
    const late = await refresh(expiredAgo(600));
    expect(late.status).toBe(401);
    expect(late.body.error.details).toEqual({ reason: 'expired' });
  });

  it('heartbeats, releases, and then knows no binding', async () => {
    const threadId = `thr_${randomUUID()}`;
    const sandbox = await open(human, threadId);
    const beat = await request(broker.url)
      .post(path(threadId, '/heartbeat'))
      .set(bearer(human))
      .send({ sandbox_id: sandbox.sandbox_id });
    expect(beat.status).toBe(200);
    const heartbeat = ThreadHeartbeatResponse.parse(beat.body);
    expect(heartbeat).toMatchObject({ sandbox_id: sandbox.sandbox_id, state: 'active' });
    const wrong = await request(broker.url)
      .post(path(threadId, '/heartbeat'))
      .set(bearer(human))
      .send({ sandbox_id: 'sb_other' });
    expect(wrong.status).toBe(409);
    expect(wrong.body.error.code).toBe('BINDING_CONFLICT');
    const elsewhere = await request(broker.url)
      .post(path(threadId, '/heartbeat'))
      .set(bearer(agent))
      .send({});
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.error.code).toBe('BINDING_NOT_FOUND');

    expect((await request(broker.url).delete(path(threadId)).set(bearer(human))).status).toBe(204);
    expect(broker.provider.calls('destroy')).toContain(sandbox.sandbox_id);
    const again = await request(broker.url).delete(path(threadId)).set(bearer(human));
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('BINDING_NOT_FOUND');
    const refresh = await request(broker.url)
      .post(path(threadId, '/refresh'))
      .set(bearer(human))
      .send({ sandbox_id: sandbox.sandbox_id, current_token: sandbox.token });
    expect(refresh.body.error.code).toBe('BINDING_NOT_FOUND');
  });

  it('validates the body and the thread id', async () => {
    const threadId = `thr_${randomUUID()}`;
    const noScopes = await request(broker.url).post(path(threadId)).set(bearer(human)).send({ ttl: 60 });
    expect(noScopes.status).toBe(400);
    expect(noScopes.body.error.message).toContain('scopes');
    const badId = await request(broker.url)
      .post(path('bad%20id'))
      .set(bearer(human))
      .send({ scopes: ['fs:ro'] });
    expect(badId.status).toBe(400);
    const denied = await request(broker.url)
      .post(path(threadId))
      .set(bearer(agent))
      .send({ scopes: ['shell'] });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('CAPABILITY_DENIED');
  });
});
