// API keys through the admin API (shown once, never listed with a secret,
// revoked, rotated, expiring), the audit query, and policies that take effect
// on the next negotiation without a restart.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { ApiKeyPage, AuditPage, ClientPolicy, CreatedApiKeyResponse, TenantPolicy } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, errorCode, makeSandbox, type AdminKeys } from './admin-kit.js';

describeEachBackend('admin API keys, audit and policies', (backend) => {
  const broker = useBroker(backend, { loops: false });
  let keys: AdminKeys;

  beforeAll(async () => {
    keys = await adminKeys(broker);
  });

  // The operator key: it makes keys for other principals (admin-key-grants.test.ts has the rule).
  const admin = (method: 'get' | 'post' | 'put' | 'delete', path: string) =>
    request(broker.url)[method](path).set(bearer(keys.operator));
  const newKey = (body: object) => admin('post', '/admin/api-keys').send(body);
  const userKey = (principalId: string, extra: object = {}) => ({
    tenant_id: broker.tenantId,
    principal_id: principalId,
    principal_type: 'user',
    scopes: ['read:sandbox', 'write:sandbox'],
    ...extra,
  });

  it('creates a key shown once that works as a human, lists it without secret, revokes it (401 after)', async () => {
    const res = await newKey(userKey('usr_created', { name: 'laptop' }));
    expect(res.status).toBe(201);
    const created = CreatedApiKeyResponse.parse(res.body);
    expect(created).toMatchObject({
      principal_type: 'user',
      name: 'laptop',
      revoked_at: null,
      expires_at: null,
    });
    // A fresh broker instance on the same database: no key cache hides the revocation there.
    const other = await broker.instance({ loops: false });
    const made = await makeSandbox(broker, created.key);
    const binding = await broker.database.prisma.sessionBinding.findUniqueOrThrow({
      where: { id: made.sessionId },
    });
    expect([binding.actorType, binding.actorId]).toEqual(['human', 'usr_created']);

    const listed = await admin('get', '/admin/api-keys').query({ principal_id: 'usr_created' });
    const page = ApiKeyPage.parse(listed.body);
    expect(page.items.map((k) => k.id)).toEqual([created.id]);
    expect(JSON.stringify(listed.body)).not.toContain(created.key.slice(17));

    expect((await admin('delete', `/admin/api-keys/${created.id}`)).status).toBe(204);
    expect((await admin('delete', `/admin/api-keys/${created.id}`)).status).toBe(204);
    const refused = await request(other.url)
      .get(`/v1/sandbox/sessions/${made.sessionId}`)
      .set(bearer(created.key));
    expect([refused.status, errorCode(refused.body)]).toEqual([401, 'UNAUTHENTICATED']);
    const hidden = ApiKeyPage.parse(
      (await admin('get', '/admin/api-keys').query({ principal_id: 'usr_created' })).body,
    );
    expect(hidden.items).toEqual([]);
    const all = await admin('get', '/admin/api-keys').query({
      principal_id: 'usr_created',
      include_revoked: 'true',
    });
    expect(ApiKeyPage.parse(all.body).items[0]?.revoked_at).toEqual(expect.any(String));
    const missing = await admin('delete', `/admin/api-keys/${randomUUID()}`);
    expect([missing.status, errorCode(missing.body)]).toEqual([404, 'NOT_FOUND']);
  });

  it('refuses an expired key with 401 and a past expiry with 400', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = CreatedApiKeyResponse.parse(
      (await newKey(userKey('usr_expiring', { expires_at: expiresAt }))).body,
    );
    expect(created.expires_at).toBe(expiresAt);
    const live = await request(broker.url).get('/v1/sandbox/sessions/ssn_none').set(bearer(created.key));
    expect(live.status).not.toBe(401);
    // The API refuses a past expiry, so the key whose time has come is made in the store.
    const { key: expired } = await broker.repositories.apiKeys.create({
      tenantId: broker.tenantId,
      principalId: 'usr_expired',
      principalType: 'user',
      scopes: ['read:sandbox'],
      expiresAt: new Date(Date.now() - 1_000),
    });
    const res = await request(broker.url).get('/v1/sandbox/sessions/ssn_none').set(bearer(expired));
    expect([res.status, errorCode(res.body)]).toEqual([401, 'UNAUTHENTICATED']);
    const past = await newKey(userKey('usr_past', { expires_at: '2020-01-01T00:00:00Z' }));
    expect([past.status, errorCode(past.body)]).toEqual([400, 'BAD_REQUEST']);
  });

  it('rotates a key: a new secret with the same identity, the old one revoked', async () => {
    const old = CreatedApiKeyResponse.parse((await newKey(userKey('usr_rotating'))).body);
    const res = await admin('post', `/admin/api-keys/${old.id}/rotate`).send({});
    expect(res.status).toBe(201);
    const rotated = CreatedApiKeyResponse.parse(res.body);
    expect(rotated.key).not.toBe(old.key);
    expect([rotated.principal_id, rotated.scopes]).toEqual([old.principal_id, old.scopes]);
    expect(await broker.repositories.apiKeys.verify(old.key)).toBeNull();
    expect((await broker.repositories.apiKeys.verify(rotated.key))?.id).toBe(rotated.id);
    const again = await admin('post', `/admin/api-keys/${old.id}/rotate`).send({});
    expect([again.status, errorCode(again.body)]).toEqual([409, 'CONFLICT']);
  });

  it('refuses bad key bodies with 400', async () => {
    const bodies = [
      userKey('usr_bad', { scopes: [] }),
      userKey('usr_bad', { scopes: ['root:sandbox'] }),
      userKey('usr_bad', { principal_type: 'robot' }),
      userKey('usr_bad', { secret: 'x' }),
      { principal_id: 'usr_bad', principal_type: 'user', scopes: ['read:sandbox'] },
    ];
    for (const body of bodies) {
      const res = await newKey(body);
      expect([res.status, errorCode(res.body)]).toEqual([400, 'BAD_REQUEST']);
    }
  });

  it('queries the audit with filters and a cursor', async () => {
    const first = await admin('get', '/admin/audit').query({
      caller_id: 'ops_operator',
      action: 'admin.api_key.create',
      limit: 2,
    });
    const page = AuditPage.parse(first.body);
    expect(page.items).toHaveLength(2);
    expect(
      page.items.every((e) => e.action === 'admin.api_key.create' && e.caller_id === 'ops_operator'),
    ).toBe(true);
    const next = AuditPage.parse(
      (
        await admin('get', '/admin/audit').query({
          caller_id: 'ops_operator',
          action: 'admin.api_key.create',
          limit: 2,
          cursor: page.next_cursor ?? '',
        })
      ).body,
    );
    const ids = [...page.items, ...next.items].map((e) => BigInt(e.id));
    expect(ids).toEqual(ids.toSorted((a, b) => (a > b ? -1 : 1)));
    expect(new Set(ids).size).toBe(ids.length);
    const refused = AuditPage.parse(
      (await admin('get', '/admin/audit').query({ outcome: 'BAD_REQUEST', tenant_id: broker.tenantId })).body,
    );
    expect(refused.items.length).toBeGreaterThan(0);
  });

  it('applies a tenant policy on the next negotiation without a restart', async () => {
    const path = `/admin/tenants/${broker.tenantId}/policy`;
    const before = TenantPolicy.parse((await admin('get', path)).body);
    expect([before.sandbox_enabled, before.environment, before.updated_at]).toEqual([
      true,
      'default-public',
      null,
    ]);
    const user = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
    await makeSandbox(broker, user);

    const put = await admin('put', path).send({ sandbox_enabled: false, environment: 'internal-only' });
    expect(TenantPolicy.parse(put.body)).toMatchObject({
      sandbox_enabled: false,
      environment: 'internal-only',
      max_sandboxes: 10,
    });
    const refused = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(user))
      .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
    expect([refused.status, errorCode(refused.body)]).toEqual([403, 'FORBIDDEN']);

    await admin('put', path).send({ sandbox_enabled: true });
    await makeSandbox(broker, user);
    const bad = await admin('put', path).send({ max_sandboxes: -1 });
    expect([bad.status, errorCode(bad.body)]).toEqual([400, 'BAD_REQUEST']);
    const unknown = await admin('put', path).send({ environment: 'dark-net' });
    expect([unknown.status, errorCode(unknown.body)]).toEqual([400, 'BAD_REQUEST']);
  });

  it('reads and writes a client policy', async () => {
    const path = `/admin/clients/cli_${randomUUID()}/policy`;
    const put = await admin('put', path).send({
      sidecar_image: 'ghcr.io/acme/sidecar:1',
      sidecar_scopes: ['llm:proxy'],
      sandbox_env: { ANTHROPIC_BASE_URL: 'http://proxy.internal' },
      max_capabilities: ['fs_read', 'exec'],
    });
    expect(put.status).toBe(200);
    const got = ClientPolicy.parse((await admin('get', path)).body);
    expect(got).toMatchObject({
      sidecar_image: 'ghcr.io/acme/sidecar:1',
      max_capabilities: ['fs:ro', 'process'],
    });
    expect(got.sandbox_env).toEqual({ ANTHROPIC_BASE_URL: 'http://proxy.internal' });
    const bad = await admin('put', path).send({ max_capabilities: ['root'] });
    expect([bad.status, errorCode(bad.body)]).toEqual([400, 'BAD_REQUEST']);
  });
});
