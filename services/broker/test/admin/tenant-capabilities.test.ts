// A tenant's allowed_capabilities (admin policy) caps every token of the tenant: new
// negotiations and the refresh of sessions made before the change; empty lifts the cap.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { RefreshTokenResponse, SessionResponse, TenantPolicy } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, errorCode, type AdminKeys } from './admin-kit.js';

describeEachBackend('tenant allowed capabilities', (backend) => {
  const broker = useBroker(backend, { loops: false });
  let keys: AdminKeys;
  let human: string;

  beforeAll(async () => {
    keys = await adminKeys(broker);
    human = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'attach:sandbox'],
      principalType: 'user',
    });
  });

  const policyPath = (): string => `/admin/tenants/${broker.tenantId}/policy`;
  const setAllowed = (allowed: string[]) =>
    request(broker.url).put(policyPath()).set(bearer(keys.admin)).send({ allowed_capabilities: allowed });
  const negotiate = (body: object = {}) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(human))
      .send({ scope: { type: 'thread', id: `thr_${randomUUID()}` }, mode: 'ensure', ...body });

  it('grants no more than the tenant allows, now and on the refresh of an older session', async () => {
    const before = SessionResponse.parse((await negotiate()).body);
    expect(before.credentials.granted_capabilities).toEqual(['fs:rw', 'shell']);

    const put = await setAllowed(['fs_read', 'exec']);
    expect(put.status).toBe(200);
    expect(TenantPolicy.parse(put.body).allowed_capabilities).toEqual(['fs:ro', 'process']);

    const after = SessionResponse.parse((await negotiate()).body);
    expect(after.credentials.granted_capabilities).toEqual(['fs:ro']);
    const refreshed = await request(broker.url)
      .post(`/v1/sandbox/sessions/${before.session_id}/refresh-token`)
      .set(bearer(human))
      .send({});
    expect(RefreshTokenResponse.parse(refreshed.body).granted_capabilities).toEqual(['fs:ro']);

    const shellOnly = await negotiate({ requested_capabilities: ['shell'] });
    expect([shellOnly.status, errorCode(shellOnly.body)]).toEqual([403, 'CAPABILITY_DENIED']);
  });

  it('lifts the cap with an empty list, and refuses names that are not capabilities', async () => {
    expect((await setAllowed([])).status).toBe(200);
    const session = SessionResponse.parse((await negotiate()).body);
    expect(session.credentials.granted_capabilities).toEqual(['fs:rw', 'shell']);
    const bad = await setAllowed(['root']);
    expect([bad.status, errorCode(bad.body)]).toEqual([400, 'BAD_REQUEST']);
  });
});
