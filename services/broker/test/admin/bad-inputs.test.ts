// The operators' and OAuth routes against bad input: every case gets the right status in
// the right error shape (the broker's envelope on /admin, RFC 6749 on /oauth), changes
// nothing, and the broker is as healthy afterwards as before.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, errorCode, type AdminKeys } from './admin-kit.js';

function admin(url: string, keys: AdminKeys, method: 'get' | 'post' | 'put' | 'delete', path: string) {
  return request(url)[method](path).set(bearer(keys.admin));
}

const past = new Date(Date.now() - 86_400_000).toISOString();
const b64 = (text: string): string => Buffer.from(text).toString('base64url');

/** [name, method, path, body, status] for the admin routes, sent with an admin key. */
const ADMIN_CASES: ReadonlyArray<
  readonly [string, 'get' | 'post' | 'put' | 'delete', string, unknown, number]
> = [
  ['limit 0', 'get', '/admin/sandboxes?limit=0', undefined, 400],
  ['limit over 200', 'get', '/admin/sandboxes?limit=201', undefined, 400],
  ['limit not a number', 'get', '/admin/sandboxes?limit=ten', undefined, 400],
  ['unknown state filter', 'get', '/admin/sandboxes?state=sleeping', undefined, 400],
  ['cursor not base64url', 'get', '/admin/sandboxes?cursor=%21%21%21', undefined, 400],
  ['cursor of garbage', 'get', `/admin/sandboxes?cursor=${b64('nonsense')}`, undefined, 400],
  ['cursor of another listing', 'get', `/admin/sandboxes?cursor=${b64('audit|1')}`, undefined, 400],
  ['unknown query parameter', 'get', '/admin/sandboxes?colour=red', undefined, 400],
  ['age filter not a time', 'get', '/admin/sandboxes?created_after=yesterday', undefined, 400],
  ['repeated filter', 'get', '/admin/sandboxes?state=active&state=idle', undefined, 400],
  ['unknown sandbox', 'get', `/admin/sandboxes/sb_${randomUUID()}`, undefined, 404],
  ['terminate unknown sandbox', 'post', `/admin/sandboxes/sb_${randomUUID()}/terminate`, {}, 404],
  ['recover unknown sandbox', 'post', `/admin/sandboxes/sb_${randomUUID()}/recover`, {}, 404],
  ['sessions: unknown state', 'get', '/admin/sessions?state=maybe', undefined, 400],
  ['policy: negative max_sandboxes', 'put', 'TENANT', { max_sandboxes: -1 }, 400],
  ['policy: unknown environment', 'put', 'TENANT', { environment: 'dark-net' }, 400],
  ['policy: unknown field', 'put', 'TENANT', { max_gpus: 8 }, 400],
  ['policy: an array body', 'put', 'TENANT', [1, 2], 400],
  ['policy: wrong type', 'put', 'TENANT', { sandbox_enabled: 'yes' }, 400],
  ['policy: unknown capability', 'put', 'TENANT', { allowed_capabilities: ['root'] }, 400],
  [
    'client policy: bad capability',
    'put',
    '/admin/clients/cli_x/policy',
    { max_capabilities: ['sudo'] },
    400,
  ],
  ['client policy: bad env name', 'put', '/admin/clients/cli_x/policy', { sandbox_env: { '1X': 'v' } }, 400],
  ['api key: empty body', 'post', '/admin/api-keys', {}, 400],
  [
    'api key: unknown principal type',
    'post',
    '/admin/api-keys',
    { tenant_id: 't', principal_id: 'p', principal_type: 'robot', scopes: ['read:sandbox'] },
    400,
  ],
  [
    'api key: unknown scope',
    'post',
    '/admin/api-keys',
    { tenant_id: 't', principal_id: 'p', principal_type: 'user', scopes: ['root:sandbox'] },
    400,
  ],
  [
    'api key: expiry in the past',
    'post',
    '/admin/api-keys',
    { tenant_id: 't', principal_id: 'p', principal_type: 'user', scopes: ['read:sandbox'], expires_at: past },
    400,
  ],
  [
    'api key: expiry not a time',
    'post',
    '/admin/api-keys',
    {
      tenant_id: 't',
      principal_id: 'p',
      principal_type: 'user',
      scopes: ['read:sandbox'],
      expires_at: 'soon',
    },
    400,
  ],
  ['revoke unknown api key', 'delete', `/admin/api-keys/${randomUUID()}`, undefined, 404],
  ['audit: bad cursor', 'get', '/admin/audit?cursor=zzz', undefined, 400],
  ['audit export: unknown format', 'get', '/admin/audit/export?format=xml', undefined, 400],
  ['usage: impossible date', 'get', '/admin/usage?from=2026-13-01&to=2026-12-31', undefined, 400],
  ['usage: from after to', 'get', '/admin/usage?from=2026-02-01&to=2026-01-01', undefined, 400],
  ['revocation: empty body', 'post', '/admin/revocations', {}, 400],
  ['revocation: two targets', 'post', '/admin/revocations', { jti: 'a', session_id: 'b' }, 400],
  ['revocation: unknown jti', 'post', '/admin/revocations', { jti: randomUUID() }, 404],
];

describeEachBackend('bad input on the operators’ and OAuth routes', (backend) => {
  const broker = useBroker(backend, { loops: false });
  let keys: AdminKeys;

  beforeAll(async () => {
    keys = await adminKeys(broker);
  });

  describe('admin routes answer the error envelope', () => {
    it.each(ADMIN_CASES)('%s', async (_name, method, path, body, status) => {
      const target = path === 'TENANT' ? `/admin/tenants/${broker.tenantId}/policy` : path;
      const call = admin(broker.url, keys, method, target);
      const res = body === undefined ? await call : await call.send(body as object);
      expect([res.status, errorCode(res.body) !== undefined]).toEqual([status, true]);
      expect(JSON.stringify(res.body)).not.toMatch(/\bat .+\.(ts|js):\d+/);
    });
  });

  it.each([
    ['an empty bearer', () => ({ Authorization: 'Bearer ' }), 401],
    ['the basic scheme', () => ({ Authorization: 'Basic eDp5' }), 401],
    ['an unknown key', () => bearer(`sbk_${'0'.repeat(12)}_${'A'.repeat(43)}`), 401],
    ['a key without admin:sandbox', () => bearer(keys.user), 403],
    ['an oversized header', () => ({ ...bearer(keys.admin), 'X-Padding': 'x'.repeat(20_000) }), 431],
  ] as const)('credentials and headers: %s', async (_name, headers, status) => {
    const res = await request(broker.url).get('/admin/sandboxes').set(headers());
    expect(res.status).toBe(status);
  });

  it('refuses an oversized policy body with 413, leaving the policy as it was', async () => {
    const path = `/admin/tenants/${broker.tenantId}/policy`;
    const before = (await admin(broker.url, keys, 'get', path)).body as object;
    const res = await admin(broker.url, keys, 'put', path).send({ padding: 'x'.repeat(400_000) });
    expect([res.status, errorCode(res.body)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    expect((await admin(broker.url, keys, 'get', path)).body).toEqual(before);
  });

  it.each([
    ['a JSON body', 'application/json', JSON.stringify({ grant_type: 'x' }), 'invalid_request'],
    ['no grant_type', 'application/x-www-form-urlencoded', 'subject_token=abc', 'invalid_request'],
    ['another grant', 'application/x-www-form-urlencoded', 'grant_type=password', 'unsupported_grant_type'],
    [
      'a garbage subject token',
      'application/x-www-form-urlencoded',
      `grant_type=${encodeURIComponent('urn:ietf:params:oauth:grant-type:token-exchange')}&subject_token=abc&subject_token_type=${encodeURIComponent('urn:ietf:params:oauth:token-type:jwt')}`,
      'invalid_request',
    ],
  ])('token exchange with %s: 400 in RFC 6749 shape', async (_name, type, body, error) => {
    const res = await request(broker.url).post('/oauth/token').set('Content-Type', type).send(body);
    expect([res.status, (res.body as { error?: string }).error]).toEqual([400, error]);
  });

  it('introspection without the sandbox credential: 401', async () => {
    const res = await request(broker.url)
      .post('/oauth/introspect')
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .send('token=abc');
    expect(res.status).toBe(401);
  });

  it('is healthy and answers an admin after all of it', async () => {
    expect((await request(broker.url).get('/healthz')).status).toBe(200);
    expect((await request(broker.url).get('/readyz')).status).toBe(200);
    expect((await admin(broker.url, keys, 'get', '/admin/sandboxes')).status).toBe(200);
  });
});
