// The first admin credential, so a fresh broker can be administered at all.
//  - BROKER_BOOTSTRAP_API_KEY set: that exact key is imported at every start
//    (idempotent) as a cross-tenant admin key, stored hashed like any other. It
//    is either a key in the broker's format (`pnpm … new-api-key` prints one) or
//    a secret the operator generated with their own tools, refused when it is
//    short or obviously weak (api-key-strength.ts; config.ts checks it first).
//  - Embedded mode without one: on first start an admin key is generated and
//    returned for the caller to print once; a marker file (mode 0600, without
//    the key) records that, so later starts neither print nor mint another. If
//    the marker names a key the database no longer has (the database was reset
//    under the data directory), a new one is generated.
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CALLER_SCOPES } from '@sbx/protocol';
import { ConfigError, isErrno } from '@sbx/service-kit';
import type { ApiKeyRecord, CreatedApiKey, NewApiKey } from '../../store/api-key-repository.js';
import { apiKeyWeakness } from './api-key-strength.js';
import { DEFAULT_TENANT_ID } from './principal.js';

/**
 * Every caller scope: an admin key can also read, write, exec and attach, and with
 * admin:keys issue keys for any tenant and principal (domain/admin/api-key-grant.ts).
 * Keys stored before admin:keys existed got it from migration `*_admin_keys_scope`.
 */
export const ADMIN_KEY_IDENTITY = Object.freeze({
  tenantId: DEFAULT_TENANT_ID,
  principalId: 'admin',
  principalType: 'service',
  scopes: CALLER_SCOPES,
} satisfies NewApiKey);

export const GENERATED_KEY_MARKER = 'generated-admin-key.json';

/** Stores a key chosen outside the broker, exactly as create() would store a random one. */
export interface ApiKeyImporter {
  /**
   * Keeps the key's prefix (or one derived from an operator-chosen key) and the
   * SHA-256 of its secret. Idempotent: importing the same key again returns the
   * stored record unchanged, so a revoked bootstrap key stays revoked across restarts.
   */
  importKey(key: string, identity: NewApiKey): Promise<ApiKeyRecord>;
}

export async function importBootstrapKey(key: string, importer: ApiKeyImporter): Promise<ApiKeyRecord> {
  const weakness = apiKeyWeakness(key);
  if (weakness !== undefined) throw new ConfigError('broker', [`BROKER_BOOTSTRAP_API_KEY: ${weakness}`]);
  return importer.importKey(key, { ...ADMIN_KEY_IDENTITY, name: 'bootstrap admin' });
}

/** The part of ApiKeyRepository the generated admin key needs. */
export interface GeneratedKeyStore {
  create(input: NewApiKey): Promise<CreatedApiKey>;
  findByPrefix(prefix: string): Promise<ApiKeyRecord | null>;
  revoke(id: string, tenantId: string): Promise<ApiKeyRecord>;
}

/** The new key to print once, or undefined when one was generated before. */
export async function ensureGeneratedAdminKey(
  dataDir: string,
  store: GeneratedKeyStore,
): Promise<CreatedApiKey | undefined> {
  const marker = path.join(dataDir, GENERATED_KEY_MARKER);
  const recordedPrefix = await readMarkerPrefix(marker);
  if (recordedPrefix !== undefined && (await store.findByPrefix(recordedPrefix)) !== null) return undefined;
  const created = await store.create({ ...ADMIN_KEY_IDENTITY, name: 'generated admin' });
  try {
    await writeMarker(marker, created.record);
  } catch (err) {
    // Without a marker the next start would mint yet another admin key; this one was never shown.
    await store.revoke(created.record.id, created.record.tenantId).catch(() => undefined);
    throw err;
  }
  return created;
}

async function readMarkerPrefix(marker: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(marker, 'utf8');
  } catch (err) {
    if (isNothingThere(err)) return undefined;
    throw err;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      'prefix' in parsed &&
      typeof parsed.prefix === 'string'
    ) {
      return parsed.prefix;
    }
  } catch {
    // an unreadable marker records nothing
  }
  return undefined;
}

/** No such file, or a path component is not a directory: either way nothing is recorded. */
function isNothingThere(err: unknown): boolean {
  return isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR');
}

async function writeMarker(marker: string, record: ApiKeyRecord): Promise<void> {
  await mkdir(path.dirname(marker), { recursive: true, mode: 0o700 });
  const content = JSON.stringify({
    keyId: record.id,
    prefix: record.prefix,
    tenantId: record.tenantId,
    principalId: record.principalId,
    createdAt: record.createdAt.toISOString(),
  });
  const partial = `${marker}.${process.pid}.tmp`;
  try {
    await writeFile(partial, `${content}\n`, { mode: 0o600, flag: 'wx' });
    await rename(partial, marker);
  } finally {
    await rm(partial, { force: true });
  }
}
