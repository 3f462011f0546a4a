// Who may use /admin/*: admin:sandbox only. Everyone else gets 403 before any
// lookup (the answer is the same for an existing and a missing resource), and
// every request, refusals included, is audited with caller, target, outcome
// and client address.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { buildOpenApiDocument } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, errorCode, makeSandbox, type AdminKeys, type MadeSandbox } from './admin-kit.js';

type Call = readonly [method: 'get' | 'post' | 'put' | 'delete', path: string, body?: object];

describeEachBackend('admin API access', (backend) => {
  const broker = useBroker(backend, { loops: false });
  let keys: AdminKeys;
  let made: MadeSandbox;
  let calls: Call[];

  beforeAll(async () => {
    keys = await adminKeys(broker);
    made = await makeSandbox(broker, keys.user);
    const victim = await broker.repositories.apiKeys.create({
      tenantId: broker.tenantId,
      principalId: 'svc_victim',
      scopes: ['read:sandbox'],
    });
    const victimId = victim.record.id;
    calls = [
      ['get', '/admin/sandboxes'],
      ['get', `/admin/sandboxes/${made.sandboxId}`],
      ['post', `/admin/sandboxes/${made.sandboxId}/recover`, {}],
      ['get', '/admin/sessions'],
      ['get', `/admin/tenants/${broker.tenantId}/policy`],
      ['put', `/admin/tenants/${broker.tenantId}/policy`, { max_sandboxes: 10 }],
      ['get', '/admin/clients/cli_1/policy'],
      ['put', '/admin/clients/cli_1/policy', { sidecar_image: 'img:1' }],
      ['get', '/admin/api-keys'],
      [
        'post',
        '/admin/api-keys',
        { tenant_id: 't', principal_id: 'p', principal_type: 'user', scopes: ['read:sandbox'] },
      ],
      ['post', `/admin/api-keys/${victimId}/rotate`, {}],
      ['get', '/admin/audit'],
      ['get', '/admin/invocations'],
      ['get', '/admin/invocations/export?format=jsonl'],
      ['get', '/admin/usage?from=2026-11-01&to=2026-11-02'],
      ['delete', `/admin/api-keys/${victimId}`],
      ['post', `/admin/sandboxes/${made.sandboxId}/terminate`, {}],
    ];
  });

  const send = (key: string, [method, path, body]: Call) => {
    const req = request(broker.url)[method](path).set(bearer(key));
    return body === undefined ? req : req.send(body);
  };

  it('answers 403 FORBIDDEN to keys without admin:sandbox, same tenant or not, and leaks nothing', async () => {
    for (const key of [keys.user, keys.otherTenant]) {
      for (const call of calls) {
        const res = await send(key, call);
        expect([call[1], res.status, errorCode(res.body)]).toEqual([call[1], 403, 'FORBIDDEN']);
        expect(JSON.stringify(res.body)).not.toContain(made.sandboxId);
      }
    }
    // An unknown id gets the very same answer: existence cannot be probed.
    const missing = await send(keys.user, ['get', `/admin/sandboxes/sb_${randomUUID()}`]);
    const existing = await send(keys.user, ['get', `/admin/sandboxes/${made.sandboxId}`]);
    expect(missing.body.error.message).toBe(existing.body.error.message);
    const malformed = await send(keys.user, ['get', '/admin/sandboxes/..bad..%20']);
    expect(malformed.status).toBe(403);
  });

  it('answers 401 without a key and serves every route to an admin key of any tenant', async () => {
    expect((await request(broker.url).get('/admin/sandboxes')).status).toBe(401);
    for (const key of [keys.admin, keys.otherAdmin]) {
      const res = await send(key, ['get', `/admin/sandboxes/${made.sandboxId}`]);
      expect(res.status).toBe(200);
      expect(res.body.tenant_id).toBe(broker.tenantId);
    }
    const expected = [200, 200, 409, 200, 200, 200, 200, 200, 200, 201, 201, 200, 200, 200, 200, 204, 200];
    const statuses: number[] = [];
    // The operator key: keys for another tenant or principal need admin:keys (admin-key-grants.test.ts).
    for (const call of calls) statuses.push((await send(keys.operator, call)).status);
    expect(statuses).toEqual(expected);
  });

  it('audits every admin request with who, what, target, outcome and client address', async () => {
    const rows = await broker.database.prisma.auditEvent.findMany({
      where: { action: { startsWith: 'admin.' } },
      orderBy: { id: 'asc' },
    });
    const refused = rows.find(
      (row) => row.action === 'admin.sandbox.terminate' && row.outcome === 'FORBIDDEN',
    );
    expect(refused).toMatchObject({
      callerType: 'user',
      tenantId: broker.tenantId,
      sandboxId: made.sandboxId,
    });
    expect(refused?.detail).toMatchObject({ target_kind: 'sandbox', target_id: made.sandboxId });
    expect(refused?.detail).toMatchObject({ client_address: expect.stringMatching(/127\.0\.0\.1/) });
    const done = rows.find((row) => row.action === 'admin.sandbox.terminate' && row.outcome === 'ok');
    expect(done).toMatchObject({ callerId: 'ops_operator', sandboxId: made.sandboxId });
    expect(rows.find((row) => row.action === 'admin.sandbox.recover')?.outcome).toBeDefined();
    expect(rows.some((row) => row.action === 'admin.sandbox.recover' && row.outcome === 'CONFLICT')).toBe(
      true,
    );
  });

  it('documents every admin route in the OpenAPI document', () => {
    const doc = buildOpenApiDocument({ version: 'test' }) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m} ${path}`),
    );
    for (const route of [
      'get /admin/sandboxes',
      'get /admin/sandboxes/{id}',
      'post /admin/sandboxes/{id}/terminate',
      'post /admin/sandboxes/{id}/recover',
      'get /admin/sessions',
      'get /admin/tenants/{tenant_id}/policy',
      'put /admin/tenants/{tenant_id}/policy',
      'get /admin/clients/{client_id}/policy',
      'put /admin/clients/{client_id}/policy',
      'post /admin/api-keys',
      'get /admin/api-keys',
      'delete /admin/api-keys/{id}',
      'get /admin/audit',
      'get /admin/audit/export',
      'get /admin/invocations',
      'get /admin/invocations/export',
      'get /admin/usage',
    ])
      expect(routes).toContain(route);
    const list = doc.paths['/admin/sandboxes']?.['get'] as { parameters: { name: string; in: string }[] };
    expect(list.parameters.map((p) => `${p.in}:${p.name}`)).toContain('query:state');
  });
});
