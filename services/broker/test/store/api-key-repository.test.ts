import { createHash } from 'node:crypto';
import { expect, it } from '@jest/globals';
import { ApiKeyRepository, parseApiKey } from '../../src/store/api-key-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { uid } from './fixtures.js';

describeEachBackend('ApiKeyRepository', (backend) => {
  const db = useTestDatabase(backend);
  const repo = () => new ApiKeyRepository(db().prisma);
  const newKey = (tenantId = uid('tenant')) =>
    repo().create({ tenantId, principalId: 'svc-ci', scopes: ['sandboxes:write'], name: 'ci' });

  it('returns the key once and stores only the SHA-256 of its secret', async () => {
    const { key, record } = await newKey();
    const parsed = parseApiKey(key);
    expect(parsed).not.toBeNull();
    expect(record).toMatchObject({ prefix: parsed?.prefix, principalType: 'service', revokedAt: null });
    expect(record).not.toHaveProperty('hash');
    const row = await db().prisma.apiKey.findUnique({ where: { id: record.id } });
    const expected = createHash('sha256')
      .update(parsed?.secret ?? '')
      .digest();
    expect(Buffer.from(row?.hash ?? []).equals(expected)).toBe(true);
    const stored = JSON.stringify(row, (_k, v: unknown) =>
      v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v,
    );
    expect(stored).not.toContain(parsed?.secret);
  });

  it('verifies the right secret and rejects a wrong, malformed or unknown one', async () => {
    const { key, record } = await newKey();
    expect((await repo().verify(key))?.id).toBe(record.id);
    const parsed = parseApiKey(key);
    const wrong = `sbk_${parsed?.prefix}_${'A'.repeat(43)}`;
    expect(await repo().verify(wrong)).toBeNull();
    expect(await repo().verify(`${key}x`)).toBeNull();
    expect(await repo().verify('sbk_000000000000_' + 'B'.repeat(43))).toBeNull();
    expect(await repo().verify('')).toBeNull();
    expect((await repo().findByPrefix(parsed?.prefix ?? ''))?.id).toBe(record.id);
  });

  it('rejects a revoked key; revoking twice keeps the first time', async () => {
    const { key, record } = await newKey();
    const at = new Date('2030-02-02T02:02:02.002Z');
    expect((await repo().revoke(record.id, record.tenantId, at)).revokedAt).toEqual(at);
    expect(await repo().verify(key)).toBeNull();
    expect((await repo().revoke(record.id, record.tenantId)).revokedAt).toEqual(at);
  });

  it('revokes only within the owning tenant', async () => {
    const { key, record } = await newKey();
    await expect(repo().revoke(record.id, 'another-tenant')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await repo().verify(key)).not.toBeNull();
  });

  it('marks a key used and lists a tenant’s keys', async () => {
    const tenantId = uid('tenant');
    const first = await newKey(tenantId);
    const second = await newKey(tenantId);
    const at = new Date('2030-03-03T03:03:03.003Z');
    await repo().markUsed(first.record.id, at);
    const listed = await repo().listByTenant(tenantId);
    expect(listed.map((k) => k.id).toSorted()).toEqual([first.record.id, second.record.id].toSorted());
    expect(listed.find((k) => k.id === first.record.id)?.lastUsedAt).toEqual(at);
  });
});
