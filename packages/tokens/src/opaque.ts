// Opaque capability tokens (docs/architecture.md D20, docs/protocol.md "Opaque tokens"):
// random strings that stand for claims the broker keeps; only their SHA-256 is stored.
// The agent asks the broker about one through POST /oauth/introspect (RFC 7662),
// authenticated with a credential derived from its sandbox's own key.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { encodeBase64url } from './base64url.js';
import { checkClaims, type ClaimRules } from './check-claims.js';
import type { VerifiedCapability } from './claims.js';
import type { SigningKey } from './signing-key.js';

export const OPAQUE_TOKEN_PREFIX = 'sbo_';
export const TOKEN_FORMATS = ['jwt', 'opaque'] as const;
export type TokenFormat = (typeof TOKEN_FORMATS)[number];

/** `sbo_` and 32 random bytes in base64url. */
export function newOpaqueToken(): string {
  return `${OPAQUE_TOKEN_PREFIX}${encodeBase64url(randomBytes(32))}`;
}

/** The looks of an opaque token (a JWT has dots); says nothing about its validity. */
export function isOpaqueToken(token: string): boolean {
  return token.startsWith(OPAQUE_TOKEN_PREFIX) && /^[A-Za-z0-9_-]{43}$/.test(token.slice(4));
}

/** What the broker stores of an opaque token: its SHA-256, base64url. */
export function opaqueTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/**
 * The introspection client secret of a sandbox's agent: HMAC-SHA256 of a fixed label and
 * the sandbox id under the sandbox's key. Only the broker and that agent can compute it.
 */
export function introspectionSecret(key: SigningKey, sandboxId: string): string {
  return createHmac('sha256', key.keyObject).update(`sbx-introspection\0${sandboxId}`).digest('base64url');
}

/** `Authorization: Basic` (RFC 6749 §2.3.1) with the sandbox id as client id. */
export function introspectionAuthorization(key: SigningKey, sandboxId: string): string {
  const pair = `${encodeURIComponent(sandboxId)}:${introspectionSecret(key, sandboxId)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

/** Whether `presented` is the secret of `sandboxId` under any of `keys` (constant time each). */
export function checkIntrospectionSecret(
  keys: readonly SigningKey[],
  sandboxId: string,
  presented: string,
): boolean {
  const given = Buffer.from(presented);
  return keys.some((key) => {
    const expected = Buffer.from(introspectionSecret(key, sandboxId));
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

/**
 * An active introspection answer as a verified capability, checked by the rules a JWT's
 * payload is (issuer, audience, times, scopes): the agent trusts no more than it would.
 */
export function capabilityFromIntrospection(
  answer: Record<string, unknown>,
  rules: ClaimRules,
  nowSeconds: number,
): VerifiedCapability {
  return checkClaims(answer, rules, nowSeconds);
}
