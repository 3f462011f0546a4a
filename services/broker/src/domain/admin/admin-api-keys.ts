// API keys managed by operators: created (the key shown once), listed without
// secrets, revoked, rotated. Creating and rotating issue a key, so both are bound
// by api-key-grant.ts: only scopes the caller holds, and only for itself unless it
// holds admin:keys. Keys act through caller authentication, which caches a
// verified key for up to 10 s per broker: a revocation or an expiry is effective
// everywhere within that time.
import {
  SbxError,
  type ApiKeyQuery,
  type CreateApiKeyRequest,
  type CreatedApiKeyResponse,
} from '@sbx/protocol';
import type { AdminKeyQueries, AdminApiKeyRow } from '../../store/admin-key-queries.js';
import type { Page } from '../../store/admin-page.js';
import type { ApiKeyRepository } from '../../store/api-key-repository.js';
import type { Principal } from '../auth/principal.js';
import { decodePosition } from './admin-cursor.js';
import { toApiKeyView } from './admin-presenter.js';
import { assertMayIssue } from './api-key-grant.js';

export interface AdminApiKeysDeps {
  readonly apiKeys: Pick<ApiKeyRepository, 'create'>;
  readonly queries: AdminKeyQueries;
  readonly clock: () => number;
}

const notFound = (id: string) => new SbxError('NOT_FOUND', `api key ${id} does not exist`);

export class AdminApiKeys {
  constructor(private readonly deps: AdminApiKeysDeps) {}

  /** A bad body is 400 whoever asks; then a key the caller may not issue is 403 (api-key-grant.ts). */
  async create(request: CreateApiKeyRequest, caller: Principal): Promise<CreatedApiKeyResponse> {
    const expiresAt = request.expires_at === undefined ? null : new Date(request.expires_at);
    if (expiresAt !== null && expiresAt.getTime() <= this.deps.clock()) {
      throw new SbxError('BAD_REQUEST', 'invalid request body: expires_at: must be in the future');
    }
    const identity = {
      tenantId: request.tenant_id,
      principalId: request.principal_id,
      principalType: request.principal_type,
      scopes: request.scopes,
    };
    assertMayIssue(caller, identity);
    const created = await this.deps.apiKeys.create({ ...identity, name: request.name ?? null, expiresAt });
    return { ...toApiKeyView(created.record), key: created.key };
  }

  list(query: ApiKeyQuery): Promise<Page<AdminApiKeyRow>> {
    return this.deps.queries.list(
      {
        tenantId: query.tenant_id,
        principalId: query.principal_id,
        includeRevoked: query.include_revoked === 'true',
      },
      { after: decodePosition('api-keys', query.cursor), limit: query.limit },
    );
  }

  async revoke(id: string): Promise<AdminApiKeyRow> {
    const row = await this.deps.queries.revoke(id, new Date(this.deps.clock()));
    if (row === null) throw notFound(id);
    return row;
  }

  /**
   * A new key with the old one's identity, scopes, name and expiry; then the old
   * one is revoked (in that order, so a failure in between leaves a working key).
   * It issues a key, so the caller must be allowed to create that very key.
   */
  async rotate(id: string, caller: Principal): Promise<CreatedApiKeyResponse> {
    const old = await this.deps.queries.find(id);
    if (old === null) throw notFound(id);
    assertMayIssue(caller, old);
    if (old.revokedAt !== null) throw new SbxError('CONFLICT', `api key ${id} is revoked; create a new one`);
    if (old.expiresAt !== null && old.expiresAt.getTime() <= this.deps.clock()) {
      throw new SbxError('CONFLICT', `api key ${id} has expired; create a new one`);
    }
    const created = await this.deps.apiKeys.create({
      tenantId: old.tenantId,
      principalId: old.principalId,
      principalType: old.principalType,
      scopes: old.scopes,
      name: old.name,
      expiresAt: old.expiresAt,
    });
    await this.revoke(id);
    return { ...toApiKeyView(created.record), key: created.key };
  }
}
