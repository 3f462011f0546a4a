import { createHmac, randomBytes } from 'node:crypto';
import { formatScopeString, SbxError } from '@sbx/protocol';
import { encodeBase64url } from './base64url.js';
import {
  normalizeRequestedScopes,
  isNonEmptyString,
  type ActorClaim,
  type CapabilityClaims,
} from './claims.js';
import { systemClock, unixSeconds, type Clock } from './clock.js';
import { ENCODED_TOKEN_HEADER } from './compact-token.js';
import type { SigningKey } from './signing-key.js';

export interface MintOptions {
  readonly key: SigningKey;
  readonly issuer: string;
  readonly subject: string;
  /** Becomes `aud`: the token is good for this sandbox only. */
  readonly sandboxId: string;
  /** Canonical names or aliases (fs_write, exec …); stored canonical. */
  readonly scopes: Iterable<string>;
  readonly ttlSeconds: number;
  readonly threadId?: string;
  readonly sessionId?: string;
  /** The `act` claim: who acts for the subject (RFC 8693 §4.1). */
  readonly actor?: ActorClaim;
  readonly now?: Clock;
  readonly jti?: string;
}

export interface MintedToken {
  readonly token: string;
  readonly claims: CapabilityClaims;
  readonly expiresAt: Date;
}

/** `tok_` and 128 random bits: unique for audit and revocation lists. */
export function newTokenId(): string {
  return `tok_${encodeBase64url(randomBytes(16))}`;
}

/**
 * Signs by hand (HS256 over `header.payload`) so the signed payload is exactly
 * the claims returned; jsonwebtoken's sign rewrites iat on its own.
 */
export function mintCapabilityToken(options: MintOptions): MintedToken {
  const claims = buildClaims(options);
  const signingInput = `${ENCODED_TOKEN_HEADER}.${encodeBase64url(JSON.stringify(claims))}`;
  const signature = createHmac('sha256', options.key.keyObject).update(signingInput).digest('base64url');
  return { token: `${signingInput}.${signature}`, claims, expiresAt: new Date(claims.exp * 1000) };
}

function buildClaims(options: MintOptions): CapabilityClaims {
  const { ttlSeconds } = options;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) {
    throw new SbxError('BAD_REQUEST', 'ttlSeconds must be a positive whole number');
  }
  const iat = unixSeconds(options.now ?? systemClock);
  return Object.freeze({
    iss: requiredText(options.issuer, 'issuer'),
    sub: requiredText(options.subject, 'subject'),
    aud: requiredText(options.sandboxId, 'sandboxId'),
    scope: formatScopeString(normalizeRequestedScopes(options.scopes)),
    ...(options.threadId === undefined ? {} : { thread_id: requiredText(options.threadId, 'threadId') }),
    ...(options.sessionId === undefined ? {} : { session_id: requiredText(options.sessionId, 'sessionId') }),
    ...(options.actor === undefined ? {} : { act: actorClaim(options.actor) }),
    jti: options.jti === undefined ? newTokenId() : requiredText(options.jti, 'jti'),
    iat,
    nbf: iat,
    exp: iat + ttlSeconds,
  });
}

function requiredText(value: unknown, name: string): string {
  if (!isNonEmptyString(value)) throw new SbxError('BAD_REQUEST', `${name} must be a non-empty string`);
  return value;
}

function actorClaim(actor: ActorClaim): ActorClaim {
  const sub = requiredText(actor.sub, 'actor.sub');
  return Object.freeze(actor.act === undefined ? { sub } : { sub, act: actorClaim(actor.act) });
}
