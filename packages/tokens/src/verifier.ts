import jwt from 'jsonwebtoken';
import { hasScope, type CapabilityScope } from '@sbx/protocol';
import { checkClaims, type ClaimRules } from './check-claims.js';
import { isNonEmptyString, TOKEN_ALGORITHM, type VerifiedCapability } from './claims.js';
import {
  checkClockTolerance,
  MAX_CLOCK_TOLERANCE_SECONDS,
  systemClock,
  unixSeconds,
  type Clock,
} from './clock.js';
import { parseCompactToken } from './compact-token.js';
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
  const jwtOptions: jwt.VerifyOptions = {
    algorithms: [TOKEN_ALGORITHM],
    issuer: rules.issuer,
    audience: rules.audience,
    clockTolerance: rules.clockToleranceSeconds,
  };

  function verify(token: unknown): VerifiedCapability {
    const payload = parseCompactToken(token);
    const nowSeconds = unixSeconds(clock);
    verifySignature(token, keys, { ...jwtOptions, clockTimestamp: nowSeconds });
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

/** Tries each key (a short, fixed list); only a signature mismatch moves on to the next. */
function verifySignature(token: unknown, keys: readonly SigningKey[], options: jwt.VerifyOptions): void {
  if (typeof token !== 'string') throw new TokenError('missing', 'no token was presented');
  for (const key of keys) {
    try {
      jwt.verify(token, key.keyObject, options);
      return;
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal.reason !== 'bad_signature') throw refusal;
    }
  }
  throw new TokenError('bad_signature', 'token signature does not verify');
}

/** jsonwebtoken's verdicts, mapped; our own structural checks ran first, so these are a second line. */
function refusalOf(err: unknown): TokenError {
  if (err instanceof jwt.TokenExpiredError) return new TokenError('expired', 'token has expired');
  if (err instanceof jwt.NotBeforeError) return new TokenError('not_yet_valid', 'token is not valid yet');
  const message = err instanceof jwt.JsonWebTokenError ? err.message : '';
  if (message === 'invalid signature')
    return new TokenError('bad_signature', 'token signature does not verify');
  if (message.startsWith('jwt audience invalid')) {
    return new TokenError('wrong_audience', 'token is for a different sandbox');
  }
  if (message.startsWith('jwt issuer invalid'))
    return new TokenError('wrong_issuer', 'token was issued by someone else');
  return new TokenError('malformed', 'token is malformed');
}

/** Throws insufficient_scope unless the token grants `scope`, directly or by implication. */
export function requireScope(verified: VerifiedCapability, scope: CapabilityScope): void {
  if (!hasScope(verified.scopes, scope)) {
    throw new TokenError('insufficient_scope', `token does not grant ${scope}`);
  }
}
