import { beforeAll, expect, it } from '@jest/globals';
import { SessionTransactions } from '../../src/store/session-transactions.js';
import type { NewSessionBinding } from '../../src/store/session-binding-repository.js';
import { WarmPoolRepository, type WarmKind } from '../../src/store/warm-pool-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { newSandbox, uid } from './fixtures.js';

describeEachBackend('WarmPoolRepository claim', (backend) => {
  const db = useTestDatabase(backend);
  let pool: WarmPoolRepository;
  beforeAll(() => {
    pool = new WarmPoolRepository(db().prisma);
  });

  const ROOMY = { maxSandboxes: 1000, maxSandboxesPerOwner: null };

  const kindOf = (): WarmKind => ({
    hostInstance: uid('host'),
    provider: 'local',
    template: 'default',
    environment: 'default_public',
  });

  const addWarm = (kind: WarmKind) =>
    pool.add({
      ...kind,
      id: uid('sbx'),
      providerRef: uid('ref'),
      httpBaseUrl: 'http://127.0.0.1:1234',
      wsBaseUrl: 'ws://127.0.0.1:1234',
      workspacePath: '/workspace',
      signingKeyCipher: new Uint8Array([9, 8, 7, 6, 5]),
    });

  const scopeOf = () => {
    const { tenantId, ownerId, scopeType, scopeId, leaseExpiresAt, hardExpiresAt } = newSandbox();
    // A minute ago: the stored active_at must be the caller's clock, not the repository's.
    const activeAt = new Date(Date.now() - 60_000);
    return { tenantId, ownerId, scopeType, scopeId, activeAt, leaseExpiresAt, hardExpiresAt };
  };

  const bindingOf = (scope: ReturnType<typeof scopeOf>): Omit<NewSessionBinding, 'sandboxId'> => ({
    id: uid('ssn'),
    tenantId: scope.tenantId,
    ownerId: scope.ownerId,
    scopeType: scope.scopeType,
    scopeId: scope.scopeId,
    actorType: 'agent',
    actorId: uid('actor'),
    clientId: 'client-a',
    capabilities: ['fs:rw', 'process'],
  });

  it('claims the oldest warm sandbox and returns the rows exactly as the store reads them', async () => {
    const kind = kindOf();
    const oldest = await addWarm(kind);
    await addWarm(kind);
    const scope = scopeOf();
    const claimed = await pool.claim(kind, scope, bindingOf(scope), ROOMY);
    expect(claimed).not.toBeNull();
    const sandbox = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: oldest.id } });
    const binding = await db().prisma.sessionBinding.findUniqueOrThrow({
      where: { id: claimed!.binding.id },
    });
    expect(claimed!.sandbox).toEqual(sandbox);
    expect(claimed!.binding).toEqual(binding);
    expect(claimed!.warm).toEqual(oldest);
    expect(sandbox).toMatchObject({
      ...scope,
      state: 'active',
      live: true,
      providerRef: oldest.providerRef,
      hostInstance: kind.hostInstance,
    });
    expect(Buffer.from(sandbox.signingKeyCipher)).toEqual(Buffer.from(oldest.signingKeyCipher));
    expect(binding).toMatchObject({ sandboxId: oldest.id, capabilities: ['fs:rw', 'process'], live: true });
    expect(await db().prisma.warmSandbox.count({ where: { id: oldest.id } })).toBe(0);
  });

  it('takes nothing of another kind and answers null when the pool is empty', async () => {
    const kind = kindOf();
    const other = await addWarm({ ...kind, template: 'python' });
    const scope = scopeOf();
    expect(await pool.claim(kind, scope, bindingOf(scope), ROOMY)).toBeNull();
    expect(await db().prisma.warmSandbox.count({ where: { id: other.id } })).toBe(1);
    expect(await db().prisma.sandbox.count({ where: { scopeId: scope.scopeId } })).toBe(0);
  });

  it('changes nothing when the scope got a live sandbox meanwhile: the warm one stays', async () => {
    const kind = kindOf();
    const warm = await addWarm(kind);
    const scope = scopeOf();
    const first = newSandbox({ ...scope });
    await new SessionTransactions(db().prisma).createSandboxWithBinding(first, bindingOf(scope));
    const losing = bindingOf(scope);
    await expect(pool.claim(kind, scope, losing, ROOMY)).rejects.toMatchObject({
      code: 'CONFLICT',
      details: { constraint: 'sandbox_one_live_per_scope' },
    });
    expect(await db().prisma.warmSandbox.count({ where: { id: warm.id } })).toBe(1);
    expect(await db().prisma.sandbox.count({ where: { id: warm.id } })).toBe(0);
    expect(await db().prisma.sessionBinding.count({ where: { id: losing.id } })).toBe(0);
  });

  it('gives concurrent claims distinct sandboxes, and null to those beyond the pool', async () => {
    const kind = kindOf();
    const warm = await Promise.all(Array.from({ length: 4 }, () => addWarm(kind)));
    const claims = await Promise.all(
      Array.from({ length: 7 }, () => {
        const scope = scopeOf();
        return pool.claim(kind, scope, bindingOf(scope), ROOMY);
      }),
    );
    const ids = claims.flatMap((claim) => (claim === null ? [] : [claim.sandbox.id]));
    expect(ids.toSorted()).toEqual(warm.map((row) => row.id).toSorted());
    expect(claims.filter((claim) => claim === null)).toHaveLength(3);
  });

  it('takes nothing when the tenant or the owner has no room for one more running sandbox', async () => {
    const kind = kindOf();
    const warm = await addWarm(kind);
    const scope = scopeOf();
    const running = newSandbox({ tenantId: scope.tenantId, ownerId: scope.ownerId });
    await new SessionTransactions(db().prisma).createSandboxWithBinding(
      running,
      bindingOf({ ...scope, scopeId: running.scopeId }),
    );
    const full = [
      { maxSandboxes: 1, maxSandboxesPerOwner: null },
      { maxSandboxes: 10, maxSandboxesPerOwner: 1 },
    ];
    for (const room of full) expect(await pool.claim(kind, scope, bindingOf(scope), room)).toBeNull();
    expect(await db().prisma.warmSandbox.count({ where: { id: warm.id } })).toBe(1);
    // Another owner of the tenant still has room under its own limit.
    const other = { ...scopeOf(), tenantId: scope.tenantId };
    const claimed = await pool.claim(kind, other, bindingOf(other), {
      maxSandboxes: 2,
      maxSandboxesPerOwner: 1,
    });
    expect(claimed?.sandbox.id).toBe(warm.id);
  });
});
