// A broker upgraded to the operator scope admin:keys: its bootstrap and generated admin
// keys, stored before the scope existed, get it from the migration (they keep issuing
// keys for any tenant); no other key does, whatever scopes it holds.
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { applyMigrations, MIGRATIONS_DIR } from '../../src/store/schema-engine.js';
import { describeEachBackend, OPEN_TIMEOUT_MS, useTestDatabase } from '../support/test-database.js';

const OLD_ADMIN_SCOPES = ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox', 'admin:sandbox'];
const MIGRATION = (await readdir(MIGRATIONS_DIR)).find((name) => name.endsWith('_admin_keys_scope'));

describeEachBackend('the admin:keys migration', (backend) => {
  const db = useTestDatabase(backend, { migrate: false });
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'sbx-admin-keys-'));
  });
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  /** Stores a key the way the broker did before the migration. */
  const stored = (
    name: string,
    scopes: string[],
    identity: { tenantId?: string; principalId?: string } = {},
  ) =>
    db().prisma.apiKey.create({
      data: {
        id: randomUUID(),
        prefix: randomUUID().replaceAll('-', '').slice(0, 12),
        hash: new Uint8Array(32),
        tenantId: identity.tenantId ?? 'default',
        principalId: identity.principalId ?? 'admin',
        principalType: 'service',
        scopes,
        name,
      },
    });

  it(
    'adds admin:keys to the bootstrap and generated admin keys only',
    async () => {
      expect(MIGRATION).toBeDefined();
      const before = path.join(scratch, 'migrations');
      await cp(MIGRATIONS_DIR, before, {
        recursive: true,
        filter: (source) => !source.endsWith(MIGRATION ?? 'none'),
      });
      expect(await applyMigrations(db().adapterFactory, before)).not.toContain(MIGRATION);

      const bootstrap = await stored('bootstrap admin', OLD_ADMIN_SCOPES);
      const generated = await stored('generated admin', OLD_ADMIN_SCOPES);
      const untouched = [
        await stored('ops laptop', OLD_ADMIN_SCOPES),
        await stored('bootstrap admin', OLD_ADMIN_SCOPES, { tenantId: `tenant_${randomUUID()}` }),
        await stored('generated admin', OLD_ADMIN_SCOPES, { principalId: 'mallory' }),
        await stored('bootstrap admin', ['read:sandbox']),
      ];

      expect(await applyMigrations(db().adapterFactory)).toEqual([MIGRATION]);
      const scopesOf = async (id: string) =>
        (await db().prisma.apiKey.findUniqueOrThrow({ where: { id } })).scopes;
      for (const key of [bootstrap, generated]) {
        expect(await scopesOf(key.id)).toEqual([...OLD_ADMIN_SCOPES, 'admin:keys']);
      }
      for (const key of untouched) expect(await scopesOf(key.id)).toEqual(key.scopes);
    },
    OPEN_TIMEOUT_MS,
  );
});
