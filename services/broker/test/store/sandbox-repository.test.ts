import { expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { SandboxRepository } from '../../src/store/sandbox-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { newSandbox, uid } from './fixtures.js';

describeEachBackend('SandboxRepository', (backend) => {
  const db = useTestDatabase(backend);
  const repo = () => new SandboxRepository(db().prisma);

  it('creates a provisioning, live sandbox with its signing key ciphertext', async () => {
    const input = newSandbox({ environment: 'internal_only' });
    const created = await repo().create(input);
    expect(created).toMatchObject({
      id: input.id,
      state: 'provisioning',
      live: true,
      environment: 'internal_only',
    });
    expect([...created.signingKeyCipher]).toEqual([1, 2, 3, 4]);
    expect(created.createdAt).toBeInstanceOf(Date);
  });

  it('finds a sandbox only within its tenant and owner', async () => {
    const input = newSandbox();
    await repo().create(input);
    expect((await repo().findById(input.id, { tenantId: input.tenantId }))?.id).toBe(input.id);
    expect((await repo().findById(input.id, { tenantId: input.tenantId, ownerId: input.ownerId }))?.id).toBe(
      input.id,
    );
    expect(await repo().findById(input.id, { tenantId: 'another-tenant' })).toBeNull();
    expect(await repo().findById(input.id, { tenantId: input.tenantId, ownerId: 'someone-else' })).toBeNull();
    expect(await repo().findById(uid('missing'), { tenantId: input.tenantId })).toBeNull();
  });

  it('allows one live sandbox per owner and scope, enforced by the database', async () => {
    const first = newSandbox();
    await repo().create(first);
    const scope = {
      tenantId: first.tenantId,
      ownerId: first.ownerId,
      scopeType: first.scopeType,
      scopeId: first.scopeId,
    };
    const failure = await repo()
      .create(newSandbox(scope))
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(SbxError);
    expect(failure).toMatchObject({
      code: 'CONFLICT',
      details: { constraint: 'sandbox_one_live_per_scope' },
    });
    expect((failure as SbxError).cause).toBeDefined();

    // Another tenant, another owner of the same tenant, or another scope is free.
    await repo().create(newSandbox({ scopeType: first.scopeType, scopeId: first.scopeId }));
    const otherOwner = newSandbox({ ...scope, ownerId: uid('owner') });
    await repo().create(otherOwner);
    expect((await repo().findLiveByScope(otherOwner))?.id).toBe(otherOwner.id);
    await repo().create(newSandbox({ ...scope, scopeType: 'workspace' }));

    // Once the first one is terminated, the scope takes a new sandbox.
    await repo().transition(first.id, 'terminated');
    const second = await repo().create(newSandbox(scope));
    expect((await repo().findLiveByScope(scope))?.id).toBe(second.id);
  });

  it('lets exactly one of 20 concurrent creates for a scope win', async () => {
    const scope = {
      tenantId: uid('tenant'),
      ownerId: uid('owner'),
      scopeType: 'thread' as const,
      scopeId: uid('thread'),
    };
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => repo().create(newSandbox(scope))),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const codes = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as SbxError).code] : []));
    expect(codes).toEqual(Array.from({ length: 19 }, () => 'CONFLICT'));
  });

  it('rejects a duplicate id as CONFLICT', async () => {
    const input = newSandbox();
    await repo().create(input);
    await expect(repo().create(newSandbox({ id: input.id }))).rejects.toMatchObject({
      code: 'CONFLICT',
      details: { constraint: 'sandboxes_pkey' },
    });
  });

  it('stamps each state transition with its time', async () => {
    const input = newSandbox();
    await repo().create(input);
    const t1 = new Date('2030-01-01T00:00:01.001Z');
    const t2 = new Date('2030-01-01T00:00:02.002Z');
    const t3 = new Date('2030-01-01T00:00:03.003Z');
    const t4 = new Date('2030-01-01T00:00:04.004Z');
    const active = await repo().transition(input.id, 'active', {
      at: t1,
      httpBaseUrl: 'http://127.0.0.1:7001',
      wsBaseUrl: 'ws://127.0.0.1:7001',
      providerRef: 'pid:42',
    });
    expect(active).toMatchObject({
      state: 'active',
      activeAt: t1,
      live: true,
      httpBaseUrl: 'http://127.0.0.1:7001',
    });
    expect((await repo().transition(input.id, 'idle', { at: t2 })).idleAt).toEqual(t2);
    expect((await repo().transition(input.id, 'suspended', { at: t3 })).suspendedAt).toEqual(t3);
    const terminated = await repo().transition(input.id, 'terminated', { at: t4 });
    expect(terminated).toMatchObject({
      state: 'terminated',
      activeAt: t1,
      idleAt: t2,
      suspendedAt: t3,
      terminatedAt: t4,
      live: null,
    });
  });

  it('records why a sandbox failed and frees its scope', async () => {
    const input = newSandbox();
    await repo().create(input);
    const failed = await repo().transition(input.id, 'failed', { failureReason: 'image pull failed' });
    expect(failed).toMatchObject({ state: 'failed', failureReason: 'image pull failed', live: null });
    expect(failed.failedAt).toBeInstanceOf(Date);
    expect(await repo().findLiveByScope(input)).toBeNull();
  });

  it('refuses a transition from a state that does not allow it', async () => {
    const input = newSandbox();
    await repo().create(input);
    await expect(repo().transition(input.id, 'idle')).rejects.toMatchObject({
      code: 'CONFLICT',
      details: { state: 'provisioning', to: 'idle' },
    });
    await repo().transition(input.id, 'terminated');
    await expect(repo().transition(input.id, 'active')).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(repo().transition(uid('missing'), 'active')).rejects.toMatchObject({
      code: 'SANDBOX_NOT_FOUND',
    });
    // An explicit `from` narrows the protocol's states, and cannot widen them.
    const other = newSandbox();
    await repo().create(other);
    await expect(repo().transition(other.id, 'active', { from: ['idle'] })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expect(repo().transition(other.id, 'idle', { from: ['provisioning'] })).rejects.toMatchObject({
      code: 'INTERNAL',
    });
    expect((await repo().findById(other.id, other))?.state).toBe('provisioning');
  });

  it('lets one of two concurrent transitions win', async () => {
    const input = newSandbox();
    await repo().create(input);
    const results = await Promise.allSettled([
      repo().transition(input.id, 'active', { from: ['provisioning'] }),
      repo().transition(input.id, 'failed', { from: ['provisioning'] }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('lists live sandboxes, filtered and oldest first', async () => {
    const tenantId = uid('tenant');
    const a = await repo().create(newSandbox({ tenantId, ownerId: 'alice' }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const b = await repo().create(newSandbox({ tenantId, ownerId: 'bob', leaseExpiresAt: new Date(0) }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const c = await repo().create(newSandbox({ tenantId, ownerId: 'alice' }));
    await repo().transition(c.id, 'terminated');
    await repo().transition(a.id, 'active');

    expect((await repo().listLive({ tenantId })).map((s) => s.id)).toEqual([a.id, b.id]);
    expect((await repo().listLive({ tenantId, ownerId: 'alice' })).map((s) => s.id)).toEqual([a.id]);
    expect((await repo().listLive({ tenantId, states: ['provisioning'] })).map((s) => s.id)).toEqual([b.id]);
    expect((await repo().listLive({ tenantId, leaseExpiredBefore: new Date() })).map((s) => s.id)).toEqual([
      b.id,
    ]);
    expect(await repo().listLive({ tenantId, limit: 1 })).toHaveLength(1);
  });

  it('renews the lease of a live sandbox only', async () => {
    const input = newSandbox();
    await repo().create(input);
    const lease = new Date('2031-01-01T00:00:00.000Z');
    expect(await repo().renewLease(input.id, lease)).toBe(true);
    expect((await repo().findById(input.id, { tenantId: input.tenantId }))?.leaseExpiresAt).toEqual(lease);
    await repo().transition(input.id, 'terminated');
    expect(await repo().renewLease(input.id, lease)).toBe(false);
  });
});
