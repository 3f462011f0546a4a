import { isWithin } from '@sbx/protocol';
import { normalizeRequestedScopes, type VerifiedCapability } from './claims.js';
import { systemClock, unixSeconds, type Clock } from './clock.js';
import { mintCapabilityToken, type MintedToken } from './mint.js';
import type { SigningKey } from './signing-key.js';
import { TokenError } from './token-error.js';
import type { CapabilityVerifier } from './verifier.js';

/** The token to narrow: already verified, or a string plus the verifier that checks it. */
export type DownscopeSource =
  | { readonly verified: VerifiedCapability }
  | { readonly token: string; readonly verifier: CapabilityVerifier };

export type DownscopeOptions = DownscopeSource & {
  /** The sandbox key, to sign the narrower token (the broker and the agent hold it). */
  readonly key: SigningKey;
  /** Canonical names or aliases; each must be granted by the original token. */
  readonly scopes: Iterable<string>;
  /** Capped so the new token never outlives the original. */
  readonly ttlSeconds: number;
  readonly now?: Clock;
  readonly jti?: string;
};

/**
 * Mints a token for the same sandbox, subject, actor (`act`), thread and session with fewer
 * (or equal) scopes and no later expiry. Escalation throws insufficient_scope.
 */
export function downscope(options: DownscopeOptions): MintedToken {
  const original = 'verified' in options ? options.verified : options.verifier.verify(options.token);
  const scopes = normalizeRequestedScopes(options.scopes);
  if (!isWithin(scopes, original.scopes)) {
    throw new TokenError('insufficient_scope', 'a downscoped token cannot grant more than the original');
  }
  const nowMs = (options.now ?? systemClock)();
  const remaining = original.claims.exp - unixSeconds(() => nowMs);
  if (remaining <= 0) throw new TokenError('expired', 'token has expired');
  const { claims } = original;
  return mintCapabilityToken({
    key: options.key,
    issuer: claims.iss,
    subject: claims.sub,
    sandboxId: claims.aud,
    scopes,
    ttlSeconds: Math.min(options.ttlSeconds, remaining),
    threadId: claims.thread_id,
    sessionId: claims.session_id,
    // A narrower token still says who acts: dropping `act` would pass an agent off as its user.
    actor: claims.act,
    now: () => nowMs,
    jti: options.jti,
  });
}
