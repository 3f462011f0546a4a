import { CAPABILITY_SCOPES, expandScopes, parseScopeString, type CapabilityScope } from '@sbx/protocol';
import {
  isNonEmptyString,
  isRecord,
  type ActorClaim,
  type CapabilityClaims,
  type VerifiedCapability,
} from './claims.js';
import { TokenError } from './token-error.js';

export interface ClaimRules {
  readonly issuer: string;
  readonly audience: string;
  readonly maxTtlSeconds: number;
  readonly clockToleranceSeconds: number;
}

const CANONICAL: ReadonlySet<string> = new Set(CAPABILITY_SCOPES);

/**
 * Checks the payload of a token whose signature already verified, so values
 * quoted in messages come from our own issuer, never from an attacker.
 */
export function checkClaims(
  payload: Record<string, unknown>,
  rules: ClaimRules,
  nowSeconds: number,
): VerifiedCapability {
  checkValidityWindow(payload, rules.clockToleranceSeconds, nowSeconds);
  const { iss, aud, sub, jti } = payload;
  if (!namesAudience(aud, rules.audience)) {
    throw new TokenError('wrong_audience', 'token is for a different sandbox');
  }
  if (iss !== rules.issuer) throw new TokenError('wrong_issuer', 'token was issued by someone else');
  // A list naming this sandbox passed above (so iss was judged first); a capability names one sandbox.
  if (aud !== rules.audience) throw new TokenError('wrong_audience', 'token is for a different sandbox');
  if (!isNonEmptyString(sub)) throw new TokenError('malformed', 'token has no subject');
  if (!isNonEmptyString(jti)) throw new TokenError('malformed', 'token has no id (jti)');
  const { iat, nbf, exp } = checkTimes(payload, rules, nowSeconds);
  const scopes = checkScope(payload['scope']);
  const threadId = optionalText(payload['thread_id'], 'thread_id');
  const sessionId = optionalText(payload['session_id'], 'session_id');
  const act = payload['act'] === undefined ? undefined : actorClaim(payload['act'], 0);
  const claims: CapabilityClaims = Object.freeze({
    iss: rules.issuer,
    sub,
    aud: rules.audience,
    scope: scopes.join(' '),
    ...(threadId === undefined ? {} : { thread_id: threadId }),
    ...(sessionId === undefined ? {} : { session_id: sessionId }),
    ...(act === undefined ? {} : { act }),
    jti,
    iat,
    ...(nbf === undefined ? {} : { nbf }),
    exp,
  });
  return Object.freeze({
    claims,
    scopes: Object.freeze(scopes),
    effectiveScopes: expandScopes(scopes),
    expiresAt: new Date(exp * 1000),
  });
}

interface TokenTimes {
  readonly iat: number;
  readonly nbf: number | undefined;
  readonly exp: number;
}

function checkTimes(payload: Record<string, unknown>, rules: ClaimRules, now: number): TokenTimes {
  const iat = numericDate(payload['iat'], 'iat');
  // Optional (RFC 7519 §4.1.5): the minimal claim set (docs/protocol.md#claims) has none;
  // when present it must be well formed.
  const nbf = payload['nbf'] === undefined ? undefined : numericDate(payload['nbf'], 'nbf');
  const exp = numericDate(payload['exp'], 'exp');
  const start = nbf === undefined ? iat : Math.min(iat, nbf);
  if (exp <= start) throw new TokenError('malformed', 'token expires before it starts');
  if (exp - start > rules.maxTtlSeconds) {
    throw new TokenError('ttl_too_long', `token lifetime exceeds ${rules.maxTtlSeconds} seconds`);
  }
  // exp and nbf were checked against the clock already (checkValidityWindow).
  if (iat > now + rules.clockToleranceSeconds) {
    throw new TokenError('not_yet_valid', 'token is not valid yet');
  }
  return { iat, nbf, exp };
}

/**
 * nbf, then exp, against the clock with the tolerance, before any other claim: a token with
 * several faults is refused for the reason it always was (these checks and their order are the
 * ones jsonwebtoken made when it verified for us). An absent nbf is allowed; an absent exp is
 * refused by checkTimes.
 */
function checkValidityWindow(payload: Record<string, unknown>, tolerance: number, now: number): void {
  const { nbf, exp } = payload;
  if (nbf !== undefined) {
    if (typeof nbf !== 'number') throw notWholeSeconds('nbf');
    if (nbf > now + tolerance) throw new TokenError('not_yet_valid', 'token is not valid yet');
  }
  if (exp !== undefined) {
    if (typeof exp !== 'number') throw notWholeSeconds('exp');
    if (now >= exp + tolerance) throw new TokenError('expired', 'token has expired');
  }
}

/** `aud` equal to the audience or a list that contains it; checkClaims refuses the list afterwards. */
function namesAudience(aud: unknown, audience: string): boolean {
  return Array.isArray(aud) ? aud.includes(audience) : aud === audience;
}

function notWholeSeconds(name: string): TokenError {
  return new TokenError('malformed', `token ${name} must be a whole number of seconds`);
}

function numericDate(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw notWholeSeconds(name);
  }
  return value;
}

function checkScope(value: unknown): CapabilityScope[] {
  if (typeof value !== 'string') throw new TokenError('malformed', 'token scope must be a string');
  // Aliases are input vocabulary only: a minted token carries canonical names.
  const strays = value.split(' ').filter((name) => name !== '' && !CANONICAL.has(name));
  if (strays.length > 0) {
    throw new TokenError('unknown_scope', `token grants unknown capabilities: ${strays.join(', ')}`);
  }
  const { scopes } = parseScopeString(value);
  if (scopes.length === 0) throw new TokenError('malformed', 'token grants no capability');
  return scopes;
}

function optionalText(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (!isNonEmptyString(value)) throw new TokenError('malformed', `token ${name} must be a non-empty string`);
  return value;
}

/** Delegation chains deeper than this are refused (ours are one or two actors long). */
const MAX_ACTOR_DEPTH = 4;

/** RFC 8693 §4.1 `act`: an object with a non-empty `sub`, maybe a nested `act`; other members are dropped. */
function actorClaim(value: unknown, depth: number): ActorClaim {
  if (!isRecord(value) || !isNonEmptyString(value['sub']) || depth >= MAX_ACTOR_DEPTH) {
    throw new TokenError('malformed', 'token act must be an object with a non-empty sub');
  }
  const sub = value['sub'];
  if (value['act'] === undefined) return Object.freeze({ sub });
  return Object.freeze({ sub, act: actorClaim(value['act'], depth + 1) });
}
