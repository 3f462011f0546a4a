// Thread refresh's proof of possession (docs/protocol.md#thread-routes): the client shows the
// token it holds, which must verify with the sandbox's own key and name the
// caller's binding. A token for another sandbox, another session or from
// another issuer is 401. An expired token still counts for a short grace, so
// a client waking from sleep can refresh without renegotiating.
import { SbxError, MAX_REQUESTED_TTL_SECONDS } from '@sbx/protocol';
import { createVerifier, parseCompactToken, type VerifiedCapability } from '@sbx/tokens';
import type { SandboxRecord, SessionBindingRecord } from '../../store/index.js';
import type { SessionCore } from './session-core.js';

export interface PossessionProof {
  readonly verified: VerifiedCapability;
  /** The lifetime the presented token was issued with; the refreshed one gets the same. */
  readonly ttlSeconds: number;
}

export function proveTokenPossession(
  core: SessionCore,
  sandbox: SandboxRecord,
  binding: SessionBindingRecord,
  token: string,
): PossessionProof {
  const payload = parseCompactToken(token);
  const exp = typeof payload['exp'] === 'number' ? payload['exp'] * 1000 : 0;
  const now = core.now();
  const graceMs = core.settings.refreshGraceSeconds * 1000;
  // The signature check below makes `exp` trustworthy; here it only picks the clock.
  const at = now >= exp && now - exp <= graceMs ? exp - 1000 : now;
  const verifier = createVerifier({
    keys: core.vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher),
    issuer: core.settings.tokenIssuer,
    audience: sandbox.id,
    maxTtlSeconds: MAX_REQUESTED_TTL_SECONDS,
    now: () => at,
  });
  const verified = verifier.verify(token);
  if (verified.claims.session_id !== binding.id) {
    throw new SbxError('UNAUTHENTICATED', 'current_token was not issued for this session');
  }
  return { verified, ttlSeconds: verified.claims.exp - verified.claims.iat };
}
