// `max_sandboxes_per_owner`: one owner cannot fill the tenant's `max_sandboxes`
// and lock the others out; neither refusal reveals the tenant's live count.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { defaultOwnerShare } from '../../src/domain/sessions/session-policy.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

describe('the default per-owner share', () => {
  it('is half of max_sandboxes rounded up, never 0', () => {
    expect([1, 2, 3, 10, 11, 1000].map(defaultOwnerShare)).toEqual([1, 1, 2, 5, 6, 500]);
  });
});

describeEachBackend('per-owner sandbox quota', (backend) => {
  const broker = useBroker(backend);
  const scopes = ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'];
  const negotiate = (key: string) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ scope: { type: 'thread', id: `thr_${randomUUID()}` }, mode: 'ensure' });

  it('caps each owner inside the tenant and leaves room for the others', async () => {
    const tenantId = `tenant_${randomUUID()}`;
    await broker.repositories.policies.upsertTenantPolicy(tenantId, {
      maxSandboxes: 3,
      maxSandboxesPerOwner: 2,
    });
    const alice = await broker.apiKey({ scopes, tenantId });
    const bob = await broker.apiKey({ scopes, tenantId });
    expect((await negotiate(alice)).status).toBe(200);
    expect((await negotiate(alice)).status).toBe(200);
    const over = await negotiate(alice);
    expect(over.status).toBe(403);
    expect(over.body.error).toMatchObject({ code: 'FORBIDDEN' });
    expect(over.body.error.message).toContain('per-owner limit of 2');

    // Bob still has room: Alice's cap kept one of the tenant's three free.
    expect((await negotiate(bob)).status).toBe(200);
    const full = await negotiate(bob);
    expect(full.status).toBe(403);
    expect(full.body.error.message).toContain("tenant's limit");
    // The live count (3) is never named.
    expect(JSON.stringify(full.body)).not.toMatch(/\b3\b/);
    expect(JSON.stringify(over.body)).not.toMatch(/\b3\b/);
  });

  it('by default caps each owner at half of max_sandboxes, and another owner can still create', async () => {
    // No stored policy: max_sandboxes 10, so the default share is 5.
    const tenantId = `tenant_${randomUUID()}`;
    const alice = await broker.apiKey({ scopes, tenantId });
    const bob = await broker.apiKey({ scopes, tenantId });
    for (let i = 0; i < 5; i += 1) expect((await negotiate(alice)).status).toBe(200);
    const over = await negotiate(alice);
    expect(over.status).toBe(403);
    expect(over.body.error).toMatchObject({ code: 'FORBIDDEN' });
    expect(over.body.error.message).toContain('per-owner limit of 5');
    expect((await negotiate(bob)).status).toBe(200);
    expect(await broker.repositories.sandboxes.countRunning(tenantId)).toBe(6);
  });

  it('derives the default share from a stored max_sandboxes, rounded up', async () => {
    const tenantId = `tenant_${randomUUID()}`;
    await broker.repositories.policies.upsertTenantPolicy(tenantId, { maxSandboxes: 3 });
    const policy = await broker.repositories.policies.getTenantPolicy(tenantId);
    expect(policy.maxSandboxesPerOwner).toBeNull();
    const alice = await broker.apiKey({ scopes, tenantId });
    expect((await negotiate(alice)).status).toBe(200);
    expect((await negotiate(alice)).status).toBe(200);
    const over = await negotiate(alice);
    expect(over.status).toBe(403);
    expect(over.body.error.message).toContain('per-owner limit of 2');
  });

  it('a per-owner value at max_sandboxes lifts the cap: one owner may use the whole tenant quota', async () => {
    const tenantId = `tenant_${randomUUID()}`;
    await broker.repositories.policies.upsertTenantPolicy(tenantId, {
      maxSandboxes: 2,
      maxSandboxesPerOwner: 2,
    });
    const alice = await broker.apiKey({ scopes, tenantId });
    expect((await negotiate(alice)).status).toBe(200);
    expect((await negotiate(alice)).status).toBe(200);
    const over = await negotiate(alice);
    expect(over.status).toBe(403);
    expect(over.body.error.message).toContain("tenant's limit");
    expect(over.body.error.message).not.toMatch(/\d/);
  });

  it('is read and written through the admin policy API', async () => {
    const tenantId = `tenant_${randomUUID()}`;
    const admin = await broker.apiKey({ scopes: ['admin:sandbox'] });
    const path = `/admin/tenants/${tenantId}/policy`;
    const put = await request(broker.url).put(path).set(bearer(admin)).send({ max_sandboxes_per_owner: 4 });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ max_sandboxes_per_owner: 4 });
    const cleared = await request(broker.url)
      .put(path)
      .set(bearer(admin))
      .send({ max_sandboxes_per_owner: null });
    expect(cleared.body).toMatchObject({ max_sandboxes_per_owner: null });
  });
});
