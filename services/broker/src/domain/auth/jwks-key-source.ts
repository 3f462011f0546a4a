// The issuer's signing keys, fetched from its JWKS and kept by kid.
//
// The whole set is refetched when a token names a kid we do not have (a key
// rotation, picked up with no restart) or when the set is older than maxAgeMs
// (so a withdrawn key stops working). Refetches are single-flight and spend a
// RequestBudget, so a flood of tokens with made-up kids costs the issuer at
// most `requestsPerMinute` requests; while the budget is spent, an unknown kid
// is refused (401) and a known kid is served from the stale set. A JWKS that
// cannot be fetched is BACKEND_UNAVAILABLE (503): the fault is not the caller's.
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { SbxError } from '@sbx/protocol';
import type { Clock } from '@sbx/tokens';
import { invalidToken } from './jws.js';
import { RequestBudget } from './request-budget.js';

export interface JwksKeySourceOptions {
  readonly jwksUri: string;
  readonly now: Clock;
  readonly maxAgeMs: number;
  readonly requestsPerMinute: number;
  readonly timeoutMs: number;
}

export interface PublishedKey {
  readonly key: KeyObject;
  /** The JWK's own `alg`, when it names one. */
  readonly alg: string | undefined;
}

export interface JwksKeySource {
  keyFor(kid: string): Promise<PublishedKey>;
}

export function createJwksKeySource(options: JwksKeySourceOptions): JwksKeySource {
  const budget = new RequestBudget(options.requestsPerMinute, options.now);
  let keys = new Map<string, PublishedKey>();
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let inflight: Promise<void> | undefined;

  async function refetch(): Promise<void> {
    try {
      keys = await fetchKeys(options.jwksUri, options.timeoutMs);
      fetchedAt = options.now();
    } finally {
      inflight = undefined;
    }
  }

  /** Single-flight: callers arriving during a fetch wait for that one. */
  function refresh(): Promise<void> {
    inflight ??= refetch();
    return inflight;
  }

  async function keyFor(kid: string): Promise<PublishedKey> {
    const known = keys.get(kid);
    if (known !== undefined && options.now() - fetchedAt < options.maxAgeMs) return known;
    // Joining a fetch already under way costs nothing.
    if (inflight === undefined && !budget.take()) {
      if (known !== undefined) return known;
      throw invalidToken('signed by an unknown key');
    }
    await refresh();
    const key = keys.get(kid);
    if (key === undefined) throw invalidToken('signed by an unknown key');
    return key;
  }

  return { keyFor };
}

function unavailable(cause: unknown): SbxError {
  return new SbxError('BACKEND_UNAVAILABLE', 'the identity provider’s signing keys cannot be fetched', {
    cause,
    retryAfterSeconds: 5,
  });
}

async function fetchKeys(jwksUri: string, timeoutMs: number): Promise<Map<string, PublishedKey>> {
  let body: unknown;
  try {
    const res = await fetch(jwksUri, {
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
      headers: { accept: 'application/json' },
    });
    if (!res.ok) throw new Error(`JWKS endpoint answered HTTP ${res.status}`);
    body = await res.json();
  } catch (err) {
    throw unavailable(err);
  }
  if (!isRecord(body) || !Array.isArray(body['keys'])) throw unavailable(new Error('JWKS has no keys array'));
  return importSigningKeys(body['keys']);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Only the public members are taken, so private material published by mistake is never imported. */
function publicJwk(jwk: Record<string, unknown>): JsonWebKey | undefined {
  const { kty, n, e, crv, x, y } = jwk;
  if (kty === 'RSA' && typeof n === 'string' && typeof e === 'string') return { kty, n, e };
  if (kty === 'EC' && typeof crv === 'string' && typeof x === 'string' && typeof y === 'string') {
    return { kty, crv, x, y };
  }
  return undefined;
}

/** Signing keys by kid; keys without a kid, for encryption, or that do not import are skipped. */
function importSigningKeys(jwks: readonly unknown[]): Map<string, PublishedKey> {
  const keys = new Map<string, PublishedKey>();
  for (const jwk of jwks) {
    if (!isRecord(jwk)) continue;
    const { kid, use, alg } = jwk;
    if (typeof kid !== 'string' || kid === '' || keys.has(kid)) continue;
    if ((use !== undefined && use !== 'sig') || (alg !== undefined && typeof alg !== 'string')) continue;
    const material = publicJwk(jwk);
    if (material === undefined) continue;
    try {
      keys.set(kid, { key: createPublicKey({ key: material, format: 'jwk' }), alg });
    } catch {
      // a malformed key is as good as absent
    }
  }
  return keys;
}
