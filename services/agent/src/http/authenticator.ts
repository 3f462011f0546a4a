import { createVerifier, type CapabilityVerifier, type VerifiedCapability } from '@sbx/tokens';
import type { KeySource } from '../adapters/key-source.js';

export interface AuthenticatorOptions {
  readonly keys: KeySource;
  readonly sandboxId: string;
  readonly issuer: string;
  readonly maxTtlSeconds: number;
  readonly now: () => number;
  /** Upper bound on cached tokens; the oldest entry goes first. */
  readonly cacheSize?: number;
}

export interface Authenticator {
  /** The verified capability, or a TokenError (an SbxError: 401, or 403 for scope). */
  authenticate(token: string): VerifiedCapability;
}

/**
 * Offline token verification with a cache keyed by the exact token string until its
 * exp: a repeated token costs one Map lookup and a comparison. The cache is dropped
 * whenever the key set changes, so a rotated-out key stops working at once.
 */
export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const limit = options.cacheSize ?? 10_000;
  const cache = new Map<string, VerifiedCapability>();
  let version = -1;
  let verifier: CapabilityVerifier | undefined;

  function currentVerifier(): CapabilityVerifier {
    const set = options.keys.current();
    if (verifier === undefined || set.version !== version) {
      verifier = createVerifier({
        keys: set.keys,
        issuer: options.issuer,
        audience: options.sandboxId,
        maxTtlSeconds: options.maxTtlSeconds,
        now: options.now,
      });
      version = set.version;
      cache.clear();
    }
    return verifier;
  }

  return {
    authenticate(token: string): VerifiedCapability {
      const active = currentVerifier();
      const hit = cache.get(token);
      if (hit !== undefined) {
        if (hit.expiresAt.getTime() > options.now()) return hit;
        // Past exp the verifier decides again (it forgives bounded clock skew, the cache does not).
        cache.delete(token);
      }
      const verified = active.verify(token);
      if (cache.size >= limit) {
        const oldest = cache.keys().next();
        if (oldest.done !== true) cache.delete(oldest.value);
      }
      cache.set(token, verified);
      return verified;
    },
  };
}
