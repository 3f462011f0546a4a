// Who is calling: an `Authorization: Bearer …` header to a Principal.
// `sbk_…` is an API key, checked against the store; so is any other credential
// without a dot, because an operator-chosen key (BROKER_BOOTSTRAP_API_KEY) has
// no prefix and a compact JWS always has dots. A dotted credential is an OIDC
// access token when an issuer is configured. No message here ever contains the
// credential.
//
// Verified API keys are remembered for apiKeyCacheTtlMs (default 10 s) so a
// client polling with one key does not cost a database lookup per request;
// the price is that a revoked key keeps working for up to that long. Each use
// stamps the key's last_used_at, at most once a minute and off the request's
// path (key-usage.ts).
import { SbxError } from '@sbx/protocol';
import { systemClock, type Clock } from '@sbx/tokens';
import type { ApiKeyRecord } from '../../store/index.js';
import type { OidcVerifier } from './oidc-verifier.js';
import { callerScopesFrom, type Principal } from './principal.js';
import { keyUsageMarkerOf } from './key-usage.js';
import { VerifiedKeyCache } from './verified-key-cache.js';

export type ApiKeyIdentity = Pick<
  ApiKeyRecord,
  'id' | 'tenantId' | 'principalId' | 'principalType' | 'scopes'
>;

/** ApiKeyRepository satisfies this: the key's record, or null for a wrong, revoked or malformed key. */
export interface ApiKeyVerifier {
  verify(key: string): Promise<ApiKeyIdentity | null>;
  /** Stamps the key's `last_used_at` (key-usage.ts: at most once a minute, off the request's path). */
  markUsed?(id: string, at: Date): Promise<void>;
}

export interface CallerAuthenticatorDeps {
  readonly apiKeys: ApiKeyVerifier;
  /** Absent: only API keys are accepted. */
  readonly oidc?: OidcVerifier | undefined;
  readonly now?: Clock | undefined;
  readonly apiKeyCacheTtlMs?: number | undefined;
  readonly apiKeyCacheMaxEntries?: number | undefined;
  /** A failed `last_used_at` write (it never fails a request). */
  readonly onKeyUsageError?: ((err: unknown) => void) | undefined;
}

export interface CallerAuthenticator {
  /** The caller named by an Authorization header value; UNAUTHENTICATED when there is none. */
  authenticate(authorization: string | undefined): Promise<Principal>;
  /** The caller of an API key this process verified moments ago, without any I/O; else undefined. */
  recognize(authorization: string | undefined): Principal | undefined;
}

export const API_KEY_PREFIX = 'sbk_';
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i;

export function bearerCredentialOf(authorization: string | undefined): string {
  if (authorization === undefined || authorization === '') {
    throw new SbxError('UNAUTHENTICATED', 'missing Authorization: Bearer <token>');
  }
  const credential = BEARER.exec(authorization)?.[1];
  if (credential === undefined)
    throw new SbxError('UNAUTHENTICATED', 'Authorization must be "Bearer <token>"');
  return credential;
}

function principalOfKey(record: ApiKeyIdentity): Principal {
  return Object.freeze({
    tenantId: record.tenantId,
    id: record.principalId,
    type: record.principalType,
    ownerId: record.principalId,
    scopes: callerScopesFrom(record.scopes),
    via: 'api_key' as const,
    keyId: record.id,
  });
}

export function createCallerAuthenticator(deps: CallerAuthenticatorDeps): CallerAuthenticator {
  const clock = deps.now ?? systemClock;
  const cache = new VerifiedKeyCache<Principal>(
    deps.apiKeyCacheTtlMs ?? 10_000,
    deps.apiKeyCacheMaxEntries ?? 1024,
    clock,
  );

  const { apiKeys } = deps;
  const markUsed = apiKeys.markUsed?.bind(apiKeys);
  const usage =
    markUsed === undefined ? undefined : keyUsageMarkerOf(apiKeys, markUsed, clock, deps.onKeyUsageError);

  /** The key's caller, its use noted for `last_used_at`. */
  function used(principal: Principal): Principal {
    if (principal.keyId !== undefined) usage?.used(principal.keyId);
    return principal;
  }

  async function byApiKey(key: string): Promise<Principal> {
    const principal = await cache.getOrLoad(key, async () => {
      const record = await apiKeys.verify(key);
      if (record === null) throw new SbxError('UNAUTHENTICATED', 'API key is not valid');
      return principalOfKey(record);
    });
    return used(principal);
  }

  async function authenticate(authorization: string | undefined): Promise<Principal> {
    const credential = bearerCredentialOf(authorization);
    if (credential.startsWith(API_KEY_PREFIX) || !credential.includes('.')) return byApiKey(credential);
    if (deps.oidc === undefined) {
      throw new SbxError('UNAUTHENTICATED', 'bearer credential must be an API key');
    }
    return deps.oidc.verify(credential);
  }

  function recognize(authorization: string | undefined): Principal | undefined {
    const credential = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
    const principal = credential === undefined ? undefined : cache.get(credential);
    return principal === undefined ? undefined : used(principal);
  }

  return Object.freeze({ authenticate, recognize });
}
