// OIDC access tokens, verified offline against the issuer's JWKS: RS256 or
// ES256 only, issuer and audience pinned, exp required, at most 30 s of skew.
// Key caching, rotation and the refetch rate limit live in jwks-key-source.ts.
import {
  checkClockTolerance,
  MAX_CLOCK_TOLERANCE_SECONDS,
  systemClock,
  unixSeconds,
  type Clock,
} from '@sbx/tokens';
import { createJwksKeySource } from './jwks-key-source.js';
import { invalidToken, parseJws, signatureVerifies } from './jws.js';
import { checkRegisteredClaims, principalFromClaims } from './oidc-claims.js';
import type { Principal } from './principal.js';

export interface OidcVerifierOptions {
  readonly issuer: string;
  readonly audience: string;
  readonly jwksUri: string;
  readonly now?: Clock | undefined;
  /** Default and maximum 30. */
  readonly clockToleranceSeconds?: number | undefined;
  /** JWKS fetches allowed per minute (default 10); fetches for unknown kids spend them. */
  readonly jwksRequestsPerMinute?: number | undefined;
  /** How long fetched keys are used before the JWKS is fetched again (default 10 minutes). */
  readonly keyCacheMaxAgeMs?: number | undefined;
  /** Timeout of one JWKS request (default 5 s). */
  readonly jwksTimeoutMs?: number | undefined;
}

export interface OidcVerifier {
  readonly issuer: string;
  /** The caller a valid token names; UNAUTHENTICATED, or BACKEND_UNAVAILABLE when keys cannot be fetched. */
  verify(token: string): Promise<Principal>;
}

export function createOidcVerifier(options: OidcVerifierOptions): OidcVerifier {
  const clock = options.now ?? systemClock;
  const clockToleranceSeconds = checkClockTolerance(
    options.clockToleranceSeconds ?? MAX_CLOCK_TOLERANCE_SECONDS,
  );
  const keys = createJwksKeySource({
    jwksUri: options.jwksUri,
    now: clock,
    maxAgeMs: options.keyCacheMaxAgeMs ?? 10 * 60_000,
    requestsPerMinute: options.jwksRequestsPerMinute ?? 10,
    timeoutMs: options.jwksTimeoutMs ?? 5000,
  });

  async function verify(token: string): Promise<Principal> {
    const jws = parseJws(token);
    const published = await keys.keyFor(jws.kid);
    // A JWK that names its algorithm may be used with that one only.
    if (published.alg !== undefined && published.alg !== jws.alg)
      throw invalidToken('alg does not match the key');
    if (!signatureVerifies(jws, published.key)) throw invalidToken('signature does not verify');
    checkRegisteredClaims(jws.payload, {
      issuer: options.issuer,
      audience: options.audience,
      nowSeconds: unixSeconds(clock),
      clockToleranceSeconds,
    });
    return principalFromClaims(jws.payload);
  }

  return Object.freeze({ issuer: options.issuer, verify });
}
