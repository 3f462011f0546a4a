// An opaque token (docs/architecture.md D20) as a verified capability, for the broker's
// own checks of a token a client shows it (token exchange's subject, thread refresh's
// proof of possession): its issuance row, found by the token's SHA-256, holds every
// claim. Unknown and revoked tokens are null; the claims are checked by the same rules
// a JWT's payload is (issuer, audience, times, scopes).
import { MAX_REQUESTED_TTL_SECONDS } from '@sbx/protocol';
import { capabilityFromIntrospection, opaqueTokenHash, type VerifiedCapability } from '@sbx/tokens';
import type { TokenIssuanceRecord, TokenIssuanceRepository } from '../../store/index.js';

export interface OpaqueSubject {
  readonly verified: VerifiedCapability;
  readonly issuance: TokenIssuanceRecord;
}

export interface OpaqueCheck {
  readonly issuer: string;
  /** Milliseconds since the epoch at which the token must still be valid. */
  readonly at: number;
}

/** The issuance row of a live (not revoked) opaque token, or null. */
export async function findOpaqueIssuance(
  issuances: Pick<TokenIssuanceRepository, 'findByTokenHash'>,
  token: string,
): Promise<TokenIssuanceRecord | null> {
  const row = await issuances.findByTokenHash(opaqueTokenHash(token));
  return row === null || row.revokedAt !== null ? null : row;
}

/** Throws the tokens package's TokenError (e.g. `expired`) like a JWT verifier would. */
export function verifyOpaqueIssuance(issuance: TokenIssuanceRecord, check: OpaqueCheck): VerifiedCapability {
  const payload: Record<string, unknown> = {
    iss: check.issuer,
    sub: issuance.subject,
    aud: issuance.audience,
    scope: issuance.scopes.join(' '),
    jti: issuance.jti,
    iat: Math.floor(issuance.issuedAt.getTime() / 1000),
    exp: Math.floor(issuance.expiresAt.getTime() / 1000),
    ...(issuance.sessionId === null ? {} : { session_id: issuance.sessionId }),
    ...(issuance.threadId === null ? {} : { thread_id: issuance.threadId }),
  };
  return capabilityFromIntrospection(
    payload,
    {
      issuer: check.issuer,
      audience: issuance.audience,
      maxTtlSeconds: MAX_REQUESTED_TTL_SECONDS,
      clockToleranceSeconds: 0,
    },
    Math.floor(check.at / 1000),
  );
}
