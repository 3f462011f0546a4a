// A capability token shown to the broker for another one (token exchange's subject, thread
// refresh's current_token) must not have been revoked (docs/security.md#revocation). Every
// revocation marks the token's issuance row (`revoked_at`) before any agent is told: by jti,
// by session (each live token of the binding) and by sandbox (each live token of the sandbox,
// whose key is also rotated), so the row answers for all three, on every broker instance,
// whatever key that instance still has cached. The refusal is the agent's own: 401
// UNAUTHENTICATED, `details.reason: "revoked"` (the token endpoint words it in RFC 6749 terms).
import { SbxError } from '@sbx/protocol';
import type { TokenIssuanceRepository } from '../../store/index.js';

export type IssuanceRows = Pick<TokenIssuanceRepository, 'findByJti'>;

/** What a token says it is: its verified claims, or the payload of one whose key was rotated. */
export interface TokenIdentity {
  readonly jti: string;
  readonly aud: string;
  readonly sub: string;
  readonly session_id?: string | undefined;
}

/** The agent's refusal of a revoked token, naming the parameter that carried it. */
export function revokedToken(name: string): SbxError {
  return new SbxError('UNAUTHENTICATED', `${name} was revoked`, { details: { reason: 'revoked' } });
}

/** Whether this token's issuance row is marked revoked. No row: nothing of it was revoked. */
export async function wasRevoked(rows: IssuanceRows, token: TokenIdentity): Promise<boolean> {
  const row = await rows.findByJti(token.jti);
  return (
    row !== null &&
    row.revokedAt !== null &&
    row.audience === token.aud &&
    row.subject === token.sub &&
    row.sessionId === (token.session_id ?? null)
  );
}

/**
 * For a JWT whose signature no longer verifies with its sandbox's current key: whether its
 * payload (not trusted) names a revoked token of `sandboxId`. A sandbox-wide revocation
 * rotates the key, so this is how such a token is told apart from a forged one; the answer
 * is only ever "revoked" instead of "not valid", and finding the row takes its random jti.
 */
export async function claimsRevoked(
  rows: IssuanceRows,
  sandboxId: string,
  payload: Readonly<Record<string, unknown>>,
): Promise<boolean> {
  const { jti, aud, sub, session_id: sessionId } = payload;
  if (typeof jti !== 'string' || typeof sub !== 'string' || aud !== sandboxId) return false;
  if (sessionId !== undefined && typeof sessionId !== 'string') return false;
  return wasRevoked(rows, { jti, aud, sub, session_id: sessionId });
}
