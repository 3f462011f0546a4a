// API keys: `sbk_<prefix>_<secret>`. The prefix is stored in clear to find the
// row; of the secret only its SHA-256 is stored, and a presented key is checked
// against it in constant time. The plaintext key exists once, in create()'s result.
//
// An operator may also choose a key of any other shape (BROKER_BOOTSTRAP_API_KEY
// from `openssl rand -hex 32`, a Kubernetes secret, Vault). It carries no prefix,
// so its row is found under one derived from it: `op_` and 16 hex digits of a
// domain-separated SHA-256 of the whole key. That id cannot be a structured
// prefix (12 hex digits, no `_`), reveals nothing the stored hash does not, and
// the whole key is then hashed and compared exactly like a structured secret.
// A key in the structured format is always read as one, whoever chose it.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { SbxError } from '@sbx/protocol';
import type { ApiKey, PrismaClient, PrincipalType } from './generated/client.js';
import { guard, isUniqueViolation, toSbxError } from './db-errors.js';

export type { PrincipalType } from './generated/client.js';
/** The stored key, without its hash. */
export type ApiKeyRecord = Omit<ApiKey, 'hash'>;

export interface NewApiKey {
  readonly tenantId: string;
  readonly principalId: string;
  readonly principalType?: PrincipalType;
  readonly scopes: readonly string[];
  readonly name?: string | null;
  /** After this time the key no longer authenticates; absent or null: never. */
  readonly expiresAt?: Date | null;
}

export interface CreatedApiKey {
  /** The full key, shown to its owner once and never stored. */
  readonly key: string;
  readonly record: ApiKeyRecord;
}

const KEY_PATTERN = /^sbk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
const PREFIX_BYTES = 6; // 12 hex characters
const SECRET_BYTES = 32; // 43 base64url characters
const PREFIX_ATTEMPTS = 3;
/** What an operator-chosen key may be: bearer-token characters (RFC 6750), base64 padding, no dot. */
const OPERATOR_KEY_PATTERN = /^[A-Za-z0-9_~+/-]+={0,2}$/;
export const OPERATOR_KEY_MIN_LENGTH = 32;
export const OPERATOR_KEY_MAX_LENGTH = 512;
const OPERATOR_ID_CONTEXT = 'sbx operator api key id\n';

/** Splits a key into prefix and secret; null when it does not have the key format. */
export function parseApiKey(key: string): { prefix: string; secret: string } | null {
  const match = KEY_PATTERN.exec(key);
  return match?.[1] === undefined || match[2] === undefined ? null : { prefix: match[1], secret: match[2] };
}

/** Whether `key` has the shape of an operator-chosen key (its strength is checked at configuration). */
export function isOperatorKeyShape(key: string): boolean {
  return (
    key.length >= OPERATOR_KEY_MIN_LENGTH &&
    key.length <= OPERATOR_KEY_MAX_LENGTH &&
    OPERATOR_KEY_PATTERN.test(key)
  );
}

/**
 * The stored prefix that finds the key's row and the part of it that is hashed:
 * a structured key's own prefix and secret, or for an operator-chosen key a
 * prefix derived from the whole key and the whole key. Null: no such key can exist.
 */
export function locateApiKey(key: string): { prefix: string; secret: string } | null {
  const parsed = parseApiKey(key);
  if (parsed !== null) return parsed;
  if (!isOperatorKeyShape(key)) return null;
  const id = createHash('sha256')
    .update(OPERATOR_ID_CONTEXT + key, 'utf8')
    .digest('hex');
  return { prefix: `op_${id.slice(0, 16)}`, secret: key };
}

/** A new key in the broker's own format; nothing is stored. */
export function generateApiKey(): { key: string; prefix: string; secret: string } {
  const prefix = randomBytes(PREFIX_BYTES).toString('hex');
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { key: `sbk_${prefix}_${secret}`, prefix, secret };
}

function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

function withoutHash({ hash: _hash, ...record }: ApiKey): ApiKeyRecord {
  return record;
}

export class ApiKeyRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async create(input: NewApiKey): Promise<CreatedApiKey> {
    for (let attempt = 1; ; attempt++) {
      const { key, prefix, secret } = generateApiKey();
      try {
        const row = await this.prisma.apiKey.create({
          data: {
            id: randomUUID(),
            prefix,
            hash: new Uint8Array(hashSecret(secret)),
            tenantId: input.tenantId,
            principalId: input.principalId,
            ...(input.principalType === undefined ? {} : { principalType: input.principalType }),
            scopes: [...input.scopes],
            name: input.name ?? null,
            expiresAt: input.expiresAt ?? null,
          },
        });
        return { key, record: withoutHash(row) };
      } catch (err) {
        // A 48-bit prefix collides about never; draw again rather than fail.
        if (isUniqueViolation(err, 'api_keys_prefix_key') && attempt < PREFIX_ATTEMPTS) continue;
        throw toSbxError(err, 'create api key');
      }
    }
  }

  /**
   * Stores a key chosen outside the broker (BROKER_BOOTSTRAP_API_KEY) as create() would
   * store a random one, structured or operator-chosen (see locateApiKey). Idempotent: the
   * same key again returns the stored record, so a revoked bootstrap key stays revoked;
   * another key with the same prefix is refused.
   */
  async importKey(key: string, identity: NewApiKey): Promise<ApiKeyRecord> {
    const parsed = locateApiKey(key);
    if (parsed === null)
      throw new SbxError(
        'BAD_REQUEST',
        'api key is neither sbk_<prefix>_<secret> nor a 32-512 character secret',
      );
    const hash = hashSecret(parsed.secret);
    const upsert = () =>
      this.prisma.apiKey.upsert({
        where: { prefix: parsed.prefix },
        update: {},
        create: {
          id: randomUUID(),
          prefix: parsed.prefix,
          hash: new Uint8Array(hash),
          tenantId: identity.tenantId,
          principalId: identity.principalId,
          ...(identity.principalType === undefined ? {} : { principalType: identity.principalType }),
          scopes: [...identity.scopes],
          name: identity.name ?? null,
        },
      });
    // Prisma's upsert reads, then inserts: brokers starting at once with the same key both
    // insert, and the one that loses finds the winner's row on a second try.
    const row = await guard('import api key', () =>
      upsert().catch((err: unknown) => (isUniqueViolation(err) ? upsert() : Promise.reject(err))),
    );
    const stored = Buffer.from(row.hash);
    if (stored.length !== hash.length || !timingSafeEqual(stored, hash)) {
      throw new SbxError('CONFLICT', 'another api key with this prefix is already stored');
    }
    return withoutHash(row);
  }

  findByPrefix(prefix: string): Promise<ApiKeyRecord | null> {
    return guard('find api key', async () => {
      const row = await this.prisma.apiKey.findUnique({ where: { prefix } });
      return row === null ? null : withoutHash(row);
    });
  }

  /**
   * The key's record when `key` is a well-formed, unrevoked, unexpired key whose
   * secret matches the stored hash; null otherwise (callers answer UNAUTHENTICATED
   * without saying which check failed). A key of neither shape costs no lookup.
   */
  async verify(key: string): Promise<ApiKeyRecord | null> {
    const parsed = locateApiKey(key);
    if (parsed === null) return null;
    const presented = hashSecret(parsed.secret);
    const row = await guard('find api key', () =>
      this.prisma.apiKey.findUnique({ where: { prefix: parsed.prefix } }),
    );
    if (row === null) return null;
    const stored = Buffer.from(row.hash);
    const matches = stored.length === presented.length && timingSafeEqual(stored, presented);
    if (!matches || row.revokedAt !== null) return null;
    if (row.expiresAt !== null && row.expiresAt.getTime() <= Date.now()) return null;
    return withoutHash(row);
  }

  /** Stamps `lastUsedAt`; the caller decides how often this is worth a write. */
  async markUsed(id: string, at: Date = new Date()): Promise<void> {
    await guard('mark api key used', () =>
      this.prisma.apiKey.updateMany({ where: { id }, data: { lastUsedAt: at } }),
    );
  }

  /**
   * Revokes a key of the tenant. Idempotent: revoking again keeps the first
   * revocation time. NOT_FOUND when the tenant has no such key.
   */
  async revoke(id: string, tenantId: string, at: Date = new Date()): Promise<ApiKeyRecord> {
    await guard('revoke api key', () =>
      this.prisma.apiKey.updateMany({ where: { id, tenantId, revokedAt: null }, data: { revokedAt: at } }),
    );
    const row = await guard('find api key', () => this.prisma.apiKey.findFirst({ where: { id, tenantId } }));
    if (row === null) throw new SbxError('NOT_FOUND', `api key ${id} does not exist`);
    return withoutHash(row);
  }

  listByTenant(tenantId: string): Promise<ApiKeyRecord[]> {
    return guard('list api keys', async () => {
      const rows = await this.prisma.apiKey.findMany({ where: { tenantId }, orderBy: { createdAt: 'asc' } });
      return rows.map(withoutHash);
    });
  }
}
