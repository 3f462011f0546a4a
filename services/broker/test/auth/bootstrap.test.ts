import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CALLER_SCOPES } from '@sbx/protocol';
import { ConfigError } from '@sbx/service-kit';
import { createCallerAuthenticator } from '../../src/domain/auth/authenticate-caller.js';
import {
  ensureGeneratedAdminKey,
  GENERATED_KEY_MARKER,
  importBootstrapKey,
  type ApiKeyImporter,
} from '../../src/domain/auth/bootstrap.js';
import { isAdmin } from '../../src/domain/auth/principal.js';
import { ApiKeyRepository, parseApiKey } from '../../src/store/api-key-repository.js';
import { backends, openPgliteTestDatabase, useTestDatabase } from '../support/test-database.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

describe(`the first admin key [${backend.name}]`, () => {
  const db = useTestDatabase(backend);
  const repo = () => new ApiKeyRepository(db().prisma);
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sbx-bootstrap-'));
  });
  afterAll(() => rm(tmp, { recursive: true, force: true }));

  const authenticate = (key: string) =>
    createCallerAuthenticator({ apiKeys: repo() }).authenticate(`Bearer ${key}`);

  const importer = (): ApiKeyImporter => repo();

  it('imports BROKER_BOOTSTRAP_API_KEY as a cross-tenant admin with every caller scope', async () => {
    const key = `sbk_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    const record = await importBootstrapKey(key, importer());
    expect(await importBootstrapKey(key, importer())).toEqual(record);
    const principal = await authenticate(key);
    expect(isAdmin(principal)).toBe(true);
    expect([...principal.scopes].toSorted()).toEqual([...CALLER_SCOPES].toSorted());
    expect(principal).toMatchObject({ tenantId: 'default', keyId: record.id, via: 'api_key' });
  });

  it('imports the same key from brokers starting at once: every one gets the one record', async () => {
    const key = `sbk_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    const records = await Promise.all(Array.from({ length: 8 }, () => importBootstrapKey(key, importer())));
    expect(new Set(records.map((record) => record.id)).size).toBe(1);
    expect(isAdmin(await authenticate(key))).toBe(true);
  });

  it('refuses a second key that reuses a stored prefix with another secret', async () => {
    const prefix = randomBytes(6).toString('hex');
    await importBootstrapKey(`sbk_${prefix}_${randomBytes(32).toString('base64url')}`, importer());
    const impostor = `sbk_${prefix}_${randomBytes(32).toString('base64url')}`;
    await expect(importBootstrapKey(impostor, importer())).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(authenticate(impostor)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('refuses a bootstrap key the store could never verify, naming the variable but not the value', async () => {
    const loose = `sbk_${'x'.repeat(40)}`; // passes the config pattern, not the key format
    const error: unknown = await importBootstrapKey(loose, importer()).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConfigError);
    expect(String(error)).toContain('BROKER_BOOTSTRAP_API_KEY');
    expect(String(error)).not.toContain(loose);
  });

  it('generates an admin key once, records it without the key, and stays quiet afterwards', async () => {
    const dataDir = path.join(tmp, 'once');
    const created = await ensureGeneratedAdminKey(dataDir, repo());
    expect(created).toBeDefined();
    expect(isAdmin(await authenticate(created!.key))).toBe(true);

    const marker = path.join(dataDir, GENERATED_KEY_MARKER);
    expect((await stat(marker)).mode & 0o777).toBe(0o600);
    const recorded = await readFile(marker, 'utf8');
    expect(recorded).toContain(created!.record.prefix);
    expect(recorded).not.toContain(parseApiKey(created!.key)!.secret);

    const before = (await repo().listByTenant('default')).length;
    expect(await ensureGeneratedAdminKey(dataDir, repo())).toBeUndefined();
    expect(await repo().listByTenant('default')).toHaveLength(before);
  });

  it('generates a new key when the database no longer has the recorded one', async () => {
    const dataDir = path.join(tmp, 'reset');
    expect(await ensureGeneratedAdminKey(dataDir, repo())).toBeDefined();
    const fresh = await openPgliteTestDatabase();
    try {
      const freshRepo = new ApiKeyRepository(fresh.prisma);
      const regenerated = await ensureGeneratedAdminKey(dataDir, freshRepo);
      expect(regenerated).toBeDefined();
      await expect(freshRepo.verify(regenerated!.key)).resolves.toMatchObject({ id: regenerated!.record.id });
      expect(await ensureGeneratedAdminKey(dataDir, freshRepo)).toBeUndefined();
    } finally {
      await fresh.close();
    }
  });

  it('revokes the key it generated when it cannot record it', async () => {
    const notADirectory = path.join(tmp, 'file');
    await writeFile(notADirectory, 'in the way');
    const generatedIds = async () =>
      (await repo().listByTenant('default')).filter((k) => k.name === 'generated admin').map((k) => k.id);
    const before = new Set(await generatedIds());
    await expect(ensureGeneratedAdminKey(notADirectory, repo())).rejects.toMatchObject({ code: 'EEXIST' });
    const added = (await generatedIds()).filter((id) => !before.has(id));
    expect(added).toHaveLength(1);
    const record = (await repo().listByTenant('default')).find((k) => k.id === added[0]);
    expect(record?.revokedAt).toBeInstanceOf(Date);
  });
});
