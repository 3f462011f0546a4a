// What an admin key may mint (docs/admin.md, "API keys"): only caller scopes it holds
// itself, and only for itself, unless it also holds admin:keys, the operator scope that
// crosses tenants and principals. `POST /admin/api-keys` and `…/rotate` both issue a
// key; a refusal is 403 FORBIDDEN in the error envelope, audited, and leaves no key.
import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { CALLER_SCOPES, CreatedApiKeyResponse } from '@sbx/protocol';
import { importBootstrapKey } from '../../src/domain/auth/bootstrap.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { errorCode, makeSandbox } from './admin-kit.js';

/** Every caller scope, admin:keys included: what the bootstrap key holds. */
const OPERATOR_SCOPES = [...CALLER_SCOPES];

describeEachBackend('API keys an admin key may mint', (backend) => {
  const broker = useBroker(backend, { loops: false });
  const otherTenant = `tenant_${randomUUID()}`;
  /** A plain admin key: admin:sandbox and read:sandbox, principal ops_plain (service). */
  let plain: string;
  /** admin:keys and every other caller scope. */
  let operator: string;

  beforeAll(async () => {
    plain = await broker.apiKey({ scopes: ['admin:sandbox', 'read:sandbox'], principalId: 'ops_plain' });
    operator = await broker.apiKey({ scopes: OPERATOR_SCOPES, principalId: 'ops_operator' });
  });

  const mint = (key: string, body: object) =>
    request(broker.url).post('/admin/api-keys').set(bearer(key)).send(body);
  const rotate = (key: string, id: string) =>
    request(broker.url).post(`/admin/api-keys/${id}/rotate`).set(bearer(key)).send({});
  const self = (scopes: string[], extra: object = {}) => ({
    tenant_id: broker.tenantId,
    principal_id: 'ops_plain',
    principal_type: 'service',
    scopes,
    ...extra,
  });
  const forbidden = (res: request.Response) => [res.status, errorCode(res.body)];
  const keysOf = (tenantId: string, principalId: string) =>
    broker.database.prisma.apiKey.count({ where: { tenantId, principalId } });
  const refusals = (action: string, callerId: string) =>
    broker.database.prisma.auditEvent.findMany({ where: { action, callerId, outcome: 'FORBIDDEN' } });

  it('refuses a caller scope the caller lacks, admin:keys included; an operator grants only what it holds', async () => {
    expect(forbidden(await mint(plain, self(['read:sandbox', 'exec:sandbox'])))).toEqual([403, 'FORBIDDEN']);
    expect(forbidden(await mint(plain, self(['admin:keys'])))).toEqual([403, 'FORBIDDEN']);
    expect(await keysOf(broker.tenantId, 'ops_plain')).toBe(1);
    expect(await refusals('admin.api_key.create', 'ops_plain')).toHaveLength(2);

    // admin:keys crosses principals and tenants; it does not lift the scope rule.
    const keysOnly = await broker.apiKey({
      scopes: ['admin:sandbox', 'admin:keys'],
      principalId: 'ops_keys',
    });
    const wider = await mint(keysOnly, self(['exec:sandbox'], { principal_id: 'ops_keys' }));
    expect(forbidden(wider)).toEqual([403, 'FORBIDDEN']);

    const granted = await mint(
      operator,
      self(['exec:sandbox', 'attach:sandbox'], { principal_id: 'ops_op2' }),
    );
    expect(granted.status).toBe(201);
    const created = CreatedApiKeyResponse.parse(granted.body);
    expect(created.scopes.toSorted()).toEqual(['attach:sandbox', 'exec:sandbox']);
    expect(await broker.repositories.apiKeys.verify(created.key)).toMatchObject({ principalId: 'ops_op2' });
  });

  it('refuses another tenant to a plain admin key; an operator mints a working key there', async () => {
    const before = (await refusals('admin.api_key.create', 'ops_plain')).length;
    const crossing = await mint(plain, self(['read:sandbox'], { tenant_id: otherTenant }));
    expect(forbidden(crossing)).toEqual([403, 'FORBIDDEN']);
    expect(await keysOf(otherTenant, 'ops_plain')).toBe(0);
    expect(await refusals('admin.api_key.create', 'ops_plain')).toHaveLength(before + 1);

    const res = await mint(operator, {
      tenant_id: otherTenant,
      principal_id: 'ops_operator',
      principal_type: 'service',
      scopes: ['read:sandbox', 'write:sandbox'],
    });
    expect(res.status).toBe(201);
    const created = CreatedApiKeyResponse.parse(res.body);
    const made = await makeSandbox(broker, created.key);
    const sandbox = await broker.database.prisma.sandbox.findUniqueOrThrow({ where: { id: made.sandboxId } });
    expect(sandbox.tenantId).toBe(otherTenant);
  });

  it('refuses another principal, by id or by type, to a plain admin key; an operator mints for it', async () => {
    const victim = self(['read:sandbox'], { principal_id: 'usr_victim', principal_type: 'user' });
    expect(forbidden(await mint(plain, victim))).toEqual([403, 'FORBIDDEN']);
    expect(forbidden(await mint(plain, self(['read:sandbox'], { principal_type: 'user' })))).toEqual([
      403,
      'FORBIDDEN',
    ]);
    expect(await keysOf(broker.tenantId, 'usr_victim')).toBe(0);
    expect(await keysOf(broker.tenantId, 'ops_plain')).toBe(1);

    const res = await mint(operator, victim);
    expect(res.status).toBe(201);
    const created = CreatedApiKeyResponse.parse(res.body);
    expect(await broker.repositories.apiKeys.verify(created.key)).toMatchObject({
      tenantId: broker.tenantId,
      principalId: 'usr_victim',
      principalType: 'user',
    });
  });

  it('lets a plain admin key mint a subset of its own scopes, or all of them, for itself', async () => {
    const narrow = await mint(plain, self(['read:sandbox'], { name: 'narrow' }));
    expect(narrow.status).toBe(201);
    const key = CreatedApiKeyResponse.parse(narrow.body).key;
    const probe = await request(broker.url).get(`/v1/sandbox/sessions/ssn_${randomUUID()}`).set(bearer(key));
    expect(probe.status).toBe(404);
    expect((await mint(plain, self(['admin:sandbox', 'read:sandbox']))).status).toBe(201);
  });

  it('refuses rotating a key of another principal or tenant, or with scopes the caller lacks', async () => {
    const store = broker.repositories.apiKeys;
    const of = (tenantId: string, principalId: string, scopes: string[]) =>
      store.create({ tenantId, principalId, principalType: 'service', scopes });
    const victim = await of(broker.tenantId, 'usr_rotated', ['read:sandbox']);
    const wider = await of(broker.tenantId, 'ops_plain', ['read:sandbox', 'exec:sandbox']);
    const abroad = await of(otherTenant, 'ops_plain', ['read:sandbox']);
    for (const { record } of [victim, wider, abroad]) {
      expect(forbidden(await rotate(plain, record.id))).toEqual([403, 'FORBIDDEN']);
    }
    for (const { key, record } of [victim, wider, abroad]) {
      expect((await store.verify(key))?.id).toBe(record.id);
    }
    const audited = await refusals('admin.api_key.rotate', 'ops_plain');
    expect(audited.map((row) => (row.detail as { target_id?: string }).target_id).toSorted()).toEqual(
      [victim, wider, abroad].map(({ record }) => record.id).toSorted(),
    );

    const own = await of(broker.tenantId, 'ops_plain', ['read:sandbox']);
    expect((await rotate(plain, own.record.id)).status).toBe(201);
    for (const { key, record } of [victim, wider, abroad]) {
      const res = await rotate(operator, record.id);
      expect(res.status).toBe(201);
      expect(await store.verify(key)).toBeNull();
    }
  });

  it('gives the bootstrap key admin:keys: it mints every scope for any tenant and principal', async () => {
    const bootstrap = `sbk_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    const record = await importBootstrapKey(bootstrap, broker.repositories.apiKeys);
    expect(record.scopes).toContain('admin:keys');
    const res = await mint(bootstrap, {
      tenant_id: otherTenant,
      principal_id: 'usr_anyone',
      principal_type: 'user',
      scopes: OPERATOR_SCOPES,
    });
    expect(res.status).toBe(201);
    expect(CreatedApiKeyResponse.parse(res.body).scopes.toSorted()).toEqual(OPERATOR_SCOPES.toSorted());
  });
});
