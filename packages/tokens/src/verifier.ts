import { createHmac, timingSafeEqual } from 'node:crypto';
import { hasScope, type CapabilityScope } from '@sbx/protocol';
import { checkClaims, type ClaimRules } from './check-claims.js';
import { isNonEmptyString, type VerifiedCapability } from './claims.js';
import {
  checkClockTolerance,
  MAX_CLOCK_TOLERANCE_SECONDS,
  systemClock,
  unixSeconds,
  type Clock,
} from './clock.js';
import { decodeCompactToken } from './compact-token.js';
import { keyList, type SigningKey } from './signing-key.js';
import { TokenError } from './token-error.js';

export interface VerifierOptions {
  /** The current key first; previous keys stay listed only while tokens they signed may live. */
  readonly keys: SigningKey | readonly SigningKey[];
  readonly issuer: string;
  /** The sandbox id this verifier guards. */
  readonly audience: string;
  readonly maxTtlSeconds: number;
  /** Default 30; more than 30 is refused. */
  readonly clockToleranceSeconds?: number;
  readonly now?: Clock;
}

export interface CapabilityVerifier {
  readonly issuer: string;
  readonly audience: string;
  /** Returns the verified capability or throws TokenError. */
  verify(token: unknown): VerifiedCapability;
}

export function createVerifier(options: VerifierOptions): CapabilityVerifier {
  const keys = keyList(options.keys);
  const rules = verifierRules(options);
  const clock = options.now ?? systemClock;

  function verify(token: unknown): VerifiedCapability {
    const { signingInput, payload, signature } = decodeCompactToken(token);
    const nowSeconds = unixSeconds(clock);
    if (!signedByAny(keys, signingInput, signature)) {
      throw new TokenError('bad_signature', 'token signature does not verify');
    }
    return checkClaims(payload, rules, nowSeconds);
  }

  return Object.freeze({ issuer: rules.issuer, audience: rules.audience, verify });
}

function verifierRules(options: VerifierOptions): ClaimRules {
  if (!isNonEmptyString(options.issuer)) throw new TypeError('issuer must be a non-empty string');
  if (!isNonEmptyString(options.audience)) throw new TypeError('audience must be a non-empty string');
  if (!Number.isSafeInteger(options.maxTtlSeconds) || options.maxTtlSeconds <= 0) {
    throw new RangeError('maxTtlSeconds must be a positive whole number');
  }
  return {
    issuer: options.issuer,
    audience: options.audience,
    maxTtlSeconds: options.maxTtlSeconds,
    clockToleranceSeconds: checkClockTolerance(options.clockToleranceSeconds ?? MAX_CLOCK_TOLERANCE_SECONDS),
  };
}

/**
 * HS256 (the only algorithm; the header said so or decodeCompactToken refused it) under each
 * listed key in turn, a short fixed list, compared in constant time. A match under a previous
 * key is as good as under the current one.
 */
function signedByAny(keys: readonly SigningKey[], signingInput: string, signature: Buffer): boolean {
  for (const key of keys) {
    const expected = createHmac('sha256', key.keyObject).update(signingInput).digest();
    if (expected.length === signature.length && timingSafeEqual(expected, signature)) return true;
  }
  return false;
}

/** Throws insufficient_scope unless the token grants `scope`, directly or by implication. */
export function requireScope(verified: VerifiedCapability, scope: CapabilityScope): void {
  if (!hasScope(verified.scopes, scope)) {
    throw new TokenError('insufficient_scope', `token does not grant ${scope}`);
  }
}
