// The full protocol on /v1/sandbox/sessions: scope, actor, requested
// capabilities in either vocabulary, the three modes with BINDING_* errors,
// GET / refresh-token / heartbeat / DELETE.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { GetBindingResponse, HeartbeatResponse, RefreshTokenResponse, SessionResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('full session protocol', (backend) => {
  const broker = useBroker(backend, { settings: { idleTimeoutSeconds: 600, hardTtlSeconds: 7200 } });
  const db = () => broker.database;
  let service: string;

  beforeAll(async () => {
    service = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
      principalType: 'service',
    });
  });

  const negotiate = (key: string, body: object) =>
    request(broker.url).post('/v1/sandbox/sessions').set(bearer(key)).send(body);
  const workspace = () => ({ type: 'workspace', id: `ws_${randomUUID()}` }) as const;

  it('is served by the broker as it ships: /readyz, the OpenAPI document, the reaper', async () => {
    const ready = await request(broker.url).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ database: 'ok', coordination: 'ok', migrations: 'ok' });
    expect((await request(broker.url).get('/v1/openapi.json')).body.paths).toHaveProperty(
      '/v1/sandbox/sessions',
    );
    await expect(broker.reaper.runOnce()).resolves.toBeDefined();
  });

  it('grants the requested capabilities the actor may have, aliases normalized, with lease and policy', async () => {
    const scope = workspace();
    const res = await negotiate(service, {
      scope,
      mode: 'ensure',
      actor: { type: 'human', id: 'usr_1' },
      requested_capabilities: ['fs_read', 'fs_write', 'shell', 'exec'],
      provider_preference: 'auto',
    });
    expect(res.status).toBe(200);
    const session = SessionResponse.parse(res.body);
    expect(session.binding).toMatchObject({ scope, provider: 'fake', state: 'active' });
    expect(session.binding.id).not.toBe(session.binding.sandbox_id);
    // exec (process) is not a human's capability: dropped, the rest granted (fs:rw reads too).
    expect(session.credentials).toMatchObject({
      token_type: 'Bearer',
      granted_capabilities: ['fs:rw', 'shell'],
    });
    expect(session.policy).toEqual({ idle_timeout_seconds: 600, hard_ttl_seconds: 7200, isolation: 'none' });
    const lease = Date.parse(session.binding.lease_expires_at) - Date.now();
    expect(lease).toBeGreaterThan(590_000);
    expect(lease).toBeLessThanOrEqual(600_000);
    expect(session).not.toHaveProperty('thread_id'); // only thread scopes mirror thread_id
  });

  it('gets, refreshes, heartbeats and releases a binding by id', async () => {
    const created = SessionResponse.parse(
      (
        await negotiate(service, {
          scope: workspace(),
          mode: 'ensure',
          requested_capabilities: ['fs:rw', 'process'],
        })
      ).body,
    );
    const one = `/v1/sandbox/sessions/${created.binding.id}`;
    const got = await request(broker.url).get(one).set(bearer(service));
    expect(got.status).toBe(200);
    const view = GetBindingResponse.parse(got.body);
    expect(view.binding).toEqual(created.binding);
    expect(got.body).not.toHaveProperty('credentials'); // a GET mints nothing

    const refreshed = await request(broker.url).post(`${one}/refresh-token`).set(bearer(service)).send({});
    expect(refreshed.status).toBe(200);
    const credentials = RefreshTokenResponse.parse(refreshed.body);
    expect(credentials.granted_capabilities).toEqual(['fs:rw', 'process']);
    expect(credentials.access_token).not.toBe(created.credentials.access_token);

    await db().prisma.sandbox.update({
      where: { id: created.binding.sandbox_id },
      data: { leaseExpiresAt: new Date(Date.now() + 1000) },
    });
    const beat = await request(broker.url).post(`${one}/heartbeat`).set(bearer(service)).send({});
    expect(beat.status).toBe(200);
    const heartbeat = HeartbeatResponse.parse(beat.body);
    expect(heartbeat.state).toBe('active');
    expect(Date.parse(heartbeat.lease_expires_at)).toBeGreaterThan(Date.now() + 590_000);
    const row = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: created.binding.sandbox_id } });
    expect(row.leaseExpiresAt.toISOString()).toBe(heartbeat.lease_expires_at);

    expect((await request(broker.url).delete(one).set(bearer(service))).status).toBe(204);
    expect((await request(broker.url).delete(one).set(bearer(service))).status).toBe(204); // idempotent
    for (const [path, code] of [
      [`${one}/refresh-token`, 'SESSION_EXPIRED'],
      [`${one}/heartbeat`, 'SESSION_EXPIRED'],
    ] as const) {
      const res = await request(broker.url).post(path).set(bearer(service)).send({});
      expect(res.status).toBe(410);
      expect(res.body.error.code).toBe(code);
    }
    const missing = await request(broker.url)
      .post('/v1/sandbox/sessions/ssn_missing/heartbeat')
      .set(bearer(service))
      .send({});
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('BINDING_NOT_FOUND');
  });

  it('attach_only finds nothing (404) until ensure; create_only conflicts (409) afterwards', async () => {
    const scope = workspace();
    const attach = await negotiate(service, { scope, mode: 'attach_only' });
    expect(attach.status).toBe(404);
    expect(attach.body.error.code).toBe('BINDING_NOT_FOUND');
    const created = await negotiate(service, { scope, mode: 'create_only' });
    expect(created.status).toBe(200);
    const again = await negotiate(service, { scope, mode: 'create_only' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('BINDING_CONFLICT');
    const attached = await negotiate(service, { scope, mode: 'attach_only' });
    expect(SessionResponse.parse(attached.body).binding.id).toBe(
      SessionResponse.parse(created.body).binding.id,
    );
    // The MVP shape names the same conflict SESSION_CONFLICT.
    const threadId = `thr_${randomUUID()}`;
    await negotiate(service, { thread_id: threadId, mode: 'ensure' });
    const mvpConflict = await negotiate(service, { thread_id: threadId, mode: 'create_only' });
    expect(mvpConflict.status).toBe(409);
    expect(mvpConflict.body.error.code).toBe('SESSION_CONFLICT');
  });

  it('refuses bad bodies, unknown providers and missing credentials with the envelope', async () => {
    const typo = await negotiate(service, {
      scope: workspace(),
      mode: 'ensure',
      requested_capabilites: ['shell'],
    });
    expect(typo.status).toBe(400);
    expect(typo.body.error).toMatchObject({ code: 'BAD_REQUEST', request_id: expect.any(String) });
    const unknownCapability = await negotiate(service, {
      scope: workspace(),
      mode: 'ensure',
      requested_capabilities: ['root'],
    });
    expect(unknownCapability.body.error.message).toContain('unknown capability "root"');
    const provider = await negotiate(service, {
      scope: workspace(),
      mode: 'ensure',
      provider_preference: 'e2b',
    });
    expect(provider.status).toBe(400);
    const anonymous = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .send({ thread_id: 'thr_1', mode: 'get' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHENTICATED');
  });
});
