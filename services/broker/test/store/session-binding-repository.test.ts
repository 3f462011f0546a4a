import { beforeAll, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { SandboxRepository, type SandboxRecord } from '../../src/store/sandbox-repository.js';
import {
  SessionBindingRepository,
  type NewSessionBinding,
} from '../../src/store/session-binding-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { newSandbox, uid } from './fixtures.js';

describeEachBackend('SessionBindingRepository', (backend) => {
  const db = useTestDatabase(backend);
  const repo = () => new SessionBindingRepository(db().prisma);
  let sandbox: SandboxRecord;

  beforeAll(async () => {
    sandbox = await new SandboxRepository(db().prisma).create(newSandbox());
  });

  /** A binding on the shared sandbox's scope, for a fresh actor unless given. */
  const binding = (overrides: Partial<NewSessionBinding> = {}): NewSessionBinding => ({
    id: uid('bind'),
    sandboxId: sandbox.id,
    tenantId: sandbox.tenantId,
    ownerId: sandbox.ownerId,
    scopeType: sandbox.scopeType,
    scopeId: sandbox.scopeId,
    actorType: 'human',
    actorId: uid('user'),
    clientId: 'web',
    capabilities: ['fs:ro', 'shell'],
    ...overrides,
  });

  it('creates a live binding and finds it by id within its tenant', async () => {
    const input = binding();
    const created = await repo().create(input);
    expect(created).toMatchObject({
      id: input.id,
      live: true,
      releasedAt: null,
      capabilities: ['fs:ro', 'shell'],
    });
    expect((await repo().findById(input.id, { tenantId: sandbox.tenantId }))?.id).toBe(input.id);
    expect(await repo().findById(input.id, { tenantId: 'another-tenant' })).toBeNull();
    expect(
      await repo().findById(input.id, { tenantId: sandbox.tenantId, ownerId: 'someone-else' }),
    ).toBeNull();
    expect((await repo().findLive(input))?.id).toBe(input.id);
  });

  it('gives a second live binding for the same scope and actor BINDING_CONFLICT', async () => {
    const first = binding();
    await repo().create(first);
    const failure = await repo()
      .create(binding({ actorId: first.actorId }))
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(SbxError);
    expect(failure).toMatchObject({ code: 'BINDING_CONFLICT', status: 409 });
    expect((failure as SbxError).cause).toBeDefined();
    // The same person as an agent, or another actor, binds fine.
    await repo().create(binding({ actorId: first.actorId, actorType: 'agent' }));
    await repo().create(binding());
  });

  it('lets exactly one of 20 concurrent binds of one actor win; the rest get BINDING_CONFLICT', async () => {
    const actorId = uid('user');
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => repo().create(binding({ actorId }))),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(19);
    for (const r of lost) {
      expect(r.reason).toBeInstanceOf(SbxError);
      expect(r.reason).toMatchObject({ code: 'BINDING_CONFLICT' });
    }
    const live = await db().prisma.sessionBinding.count({ where: { actorId, live: true } });
    expect(live).toBe(1);
  });

  it('allows a new binding once the previous one is released', async () => {
    const first = binding();
    await repo().create(first);
    const at = new Date('2030-05-05T05:05:05.005Z');
    const released = await repo().release(first.id, { at });
    expect(released).toMatchObject({ live: null, releasedAt: at });
    expect(await repo().findLive(first)).toBeNull();
    const second = await repo().create(binding({ actorId: first.actorId }));
    expect((await repo().findLive(first))?.id).toBe(second.id);
  });

  it('releases idempotently and reports an unknown binding as BINDING_NOT_FOUND', async () => {
    const input = binding();
    await repo().create(input);
    const first = await repo().release(input.id);
    const again = await repo().release(input.id, { at: new Date('2040-01-01T00:00:00.000Z') });
    expect(again.releasedAt).toEqual(first.releasedAt);
    await expect(repo().release(uid('missing'))).rejects.toMatchObject({ code: 'BINDING_NOT_FOUND' });
    await expect(repo().release(input.id, { scope: { tenantId: 'another-tenant' } })).rejects.toMatchObject({
      code: 'BINDING_NOT_FOUND',
    });
  });

  it('refuses a binding to a sandbox that does not exist', async () => {
    await expect(repo().create(binding({ sandboxId: uid('missing') }))).rejects.toMatchObject({
      code: 'SANDBOX_NOT_FOUND',
    });
  });

  it('lists and releases the live bindings of a sandbox', async () => {
    const own = await new SandboxRepository(db().prisma).create(newSandbox());
    const onOwn = (actorId: string) =>
      binding({
        sandboxId: own.id,
        tenantId: own.tenantId,
        scopeId: own.scopeId,
        ownerId: own.ownerId,
        actorId,
      });
    const a = await repo().create(onOwn('a'));
    const b = await repo().create(onOwn('b'));
    await repo().release(b.id);
    await repo().create(onOwn('c'));
    expect((await repo().listLiveBySandbox(own.id)).map((x) => x.actorId)).toEqual(['a', 'c']);
    expect(await repo().touch(a.id)).toBe(true);
    expect(await repo().touch(b.id)).toBe(false);
    expect(await repo().releaseAllForSandbox(own.id)).toBe(2);
    expect(await repo().listLiveBySandbox(own.id)).toEqual([]);
  });
});
