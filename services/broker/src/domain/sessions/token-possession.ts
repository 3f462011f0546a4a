// Thread refresh's proof of possession (docs/protocol.md#thread-routes): the client shows the
// token it holds, which must verify with the sandbox's own key and name the
// caller's binding. A token for another sandbox, another session or from
// another issuer is 401. An expired token still counts for a short grace, so
// a client waking from sleep can refresh without renegotiating. A revoked token (by jti,
// session or sandbox, also once its key was rotated) is refused as the agent refuses it:
// 401 with `details.reason: "revoked"` (domain/tokens/revoked-token.ts).
import { SbxError, MAX_REQUESTED_TTL_SECONDS } from '@sbx/protocol';
import {
  createVerifier,
  isOpaqueToken,
  parseCompactToken,
  TokenError,
  type VerifiedCapability,
} from '@sbx/tokens';
import { findOpaqueIssuance, verifyOpaqueIssuance } from '../tokens/opaque-subject.js';
import { claimsRevoked, revokedToken, wasRevoked } from '../tokens/revoked-token.js';
import type { SandboxRecord, SessionBindingRecord } from '../../store/index.js';
import type { SessionCore } from './session-core.js';

export interface PossessionProof {
  readonly verified: VerifiedCapability;
  /** The lifetime the presented token was issued with; the refreshed one gets the same. */
  readonly ttlSeconds: number;
}

export async function proveTokenPossession(
  core: SessionCore,
  sandbox: SandboxRecord,
  binding: SessionBindingRecord,
  token: string,
): Promise<PossessionProof> {
  const verified = isOpaqueToken(token)
    ? await verifyOpaque(core, sandbox, token)
    : await verifyJwt(core, sandbox, token);
  if (verified.claims.session_id !== binding.id) {
    throw new SbxError('UNAUTHENTICATED', 'current_token was not issued for this session');
  }
  if (await wasRevoked(core.repositories.tokens, verified.claims)) throw revokedToken('current_token');
  return { verified, ttlSeconds: verified.claims.exp - verified.claims.iat };
}

/** Within the grace after `exp`, the token is checked as of just before it expired. */
function checkedAt(core: SessionCore, expSeconds: number): number {
  const exp = expSeconds * 1000;
  const now = core.now();
  const graceMs = core.settings.refreshGraceSeconds * 1000;
  return now >= exp && now - exp <= graceMs ? exp - 1000 : now;
}

async function verifyJwt(
  core: SessionCore,
  sandbox: SandboxRecord,
  token: string,
): Promise<VerifiedCapability> {
  const payload = parseCompactToken(token);
  // The signature check below makes `exp` trustworthy; here it only picks the clock.
  const at = checkedAt(core, typeof payload['exp'] === 'number' ? payload['exp'] : 0);
  const verifier = createVerifier({
    keys: core.vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher),
    issuer: core.settings.tokenIssuer,
    audience: sandbox.id,
    maxTtlSeconds: MAX_REQUESTED_TTL_SECONDS,
    now: () => at,
  });
  try {
    return verifier.verify(token);
  } catch (err) {
    // Signed with a key rotated away by a sandbox-wide revocation: revoked, not forged.
    if (err instanceof TokenError && err.reason === 'bad_signature') {
      if (await claimsRevoked(core.repositories.tokens, sandbox.id, payload))
        throw revokedToken('current_token');
    }
    throw err;
  }
}

/** D20: the issuance row, found by the token's hash, stands for the signature. */
async function verifyOpaque(
  core: SessionCore,
  sandbox: SandboxRecord,
  token: string,
): Promise<VerifiedCapability> {
  const issuance = await findOpaqueIssuance(core.repositories.tokens, token);
  if (issuance === null || issuance.audience !== sandbox.id)
    throw new SbxError('UNAUTHENTICATED', 'current_token is not a live token of this sandbox');
  const at = checkedAt(core, Math.floor(issuance.expiresAt.getTime() / 1000));
  return verifyOpaqueIssuance(issuance, { issuer: core.settings.tokenIssuer, at });
}
