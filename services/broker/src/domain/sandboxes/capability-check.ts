// A capability token shown to the broker's relay (docs/sandboxes.md "Relay mode"): it must
// verify as the sandbox's agent would verify it (the sandbox's key, issuer, audience, times)
// and must not be revoked — checked against the issuance row on every call, so a revocation
// takes effect at the broker at once, before any pushed list reaches the agent.
import { MAX_REQUESTED_TTL_SECONDS, SbxError } from '@sbx/protocol';
import { createVerifier, isOpaqueToken, TokenError, type VerifiedCapability } from '@sbx/tokens';
import type { SandboxRecord, TokenIssuanceRepository } from '../../store/index.js';
import type { KeyVault } from '../keys/key-vault.js';
import { findOpaqueIssuance, verifyOpaqueIssuance } from '../tokens/opaque-subject.js';

export interface CapabilityCheckDeps {
  readonly vault: Pick<KeyVault, 'openSigningKey'>;
  readonly issuances: Pick<TokenIssuanceRepository, 'findByJti' | 'findByTokenHash'>;
  readonly issuer: string;
  readonly now: () => number;
}

const refused = (reason: string, cause?: unknown) =>
  new SbxError(
    'UNAUTHENTICATED',
    `capability token refused: ${reason}`,
    cause === undefined ? {} : { cause },
  );

export async function checkCapability(
  deps: CapabilityCheckDeps,
  sandbox: SandboxRecord,
  token: string,
): Promise<VerifiedCapability> {
  if (isOpaqueToken(token)) {
    const issuance = await findOpaqueIssuance(deps.issuances, token);
    if (issuance === null || issuance.audience !== sandbox.id)
      throw refused('not a live token of this sandbox');
    return guarded(() => verifyOpaqueIssuance(issuance, { issuer: deps.issuer, at: deps.now() }));
  }
  const verifier = createVerifier({
    keys: deps.vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher),
    issuer: deps.issuer,
    audience: sandbox.id,
    maxTtlSeconds: MAX_REQUESTED_TTL_SECONDS,
    now: deps.now,
  });
  const verified = guarded(() => verifier.verify(token));
  const issuance = await deps.issuances.findByJti(verified.claims.jti);
  if (issuance?.revokedAt !== null && issuance?.revokedAt !== undefined) throw refused('revoked');
  return verified;
}

function guarded(verify: () => VerifiedCapability): VerifiedCapability {
  try {
    return verify();
  } catch (err) {
    if (err instanceof TokenError) throw refused(err.reason, err);
    throw err;
  }
}
