import { SbxError } from '@sbx/protocol';
import { createVerifier, TokenError, type CapabilityVerifier, type VerifiedCapability } from '@sbx/tokens';
import type { KeySource } from '../adapters/key-source.js';
import type { RevocationList } from '../adapters/revocation-list.js';
import type { AgentMetrics } from '../domain/metrics/agent-metrics.js';

export interface AuthenticatorOptions {
  readonly keys: KeySource;
  readonly sandboxId: string;
  readonly issuer: string;
  readonly maxTtlSeconds: number;
  readonly now: () => number;
  /** Upper bound on cached tokens; the oldest entry goes first. */
  readonly cacheSize?: number;
  /** Revoked jtis and the `not_before` of a sandbox-wide revocation; none when omitted. */
  readonly revocations?: RevocationList;
  /** Told the reason of every refused token (HTTP and WebSocket alike). */
  readonly metrics?: Pick<AgentMetrics, 'authFailed'> | undefined;
}

export interface Authenticator {
  /**
   * The verified capability, or a TokenError (an SbxError: 401, or 403 for scope). Offline
   * (JWT) it answers at once; asking the broker (opaque tokens, D20) it answers later.
   */
  authenticate(token: string): VerifiedCapability | Promise<VerifiedCapability>;
  /**
   * Runs `listener` after the revocation list changed (and, for a sandbox-wide revocation,
   * after the old key was retired): open WebSockets re-check their token then.
   */
  onRevocation?(listener: () => void): () => void;
}

/** The JWT authenticator: it never waits. */
export interface OfflineAuthenticator extends Authenticator {
  authenticate(token: string): VerifiedCapability;
}

/** The reason a credential was refused: a token's own (`expired`, `revoked` …), else its error code. */
export function refusalReason(err: unknown): string {
  const reason = err instanceof SbxError ? err.details?.['reason'] : undefined;
  if (typeof reason === 'string') return reason;
  return err instanceof SbxError ? err.code.toLowerCase() : 'error';
}

/** How the broker's API keys begin (`sbk_…`). */
const API_KEY_PREFIX = 'sbk_';

/**
 * Refuses a broker API key sent where a capability token belongs, saying so: the token
 * parser would only say the key lacks a JWT's three segments. Never quotes the key.
 */
export function refuseApiKey(token: string): void {
  if (!token.startsWith(API_KEY_PREFIX)) return;
  throw new TokenError(
    'malformed',
    'this is an API key (sbk_…); the agent takes the capability token from POST /v1/sandbox/sessions',
  );
}

function revoked(): SbxError {
  return new SbxError('UNAUTHENTICATED', 'token was revoked', { details: { reason: 'revoked' } });
}

/**
 * Offline token verification with a cache keyed by the exact token string until its
 * exp: a repeated token costs one Map lookup and a comparison. The cache is dropped
 * whenever the key set changes, so a rotated-out key stops working at once.
 */
export function createAuthenticator(options: AuthenticatorOptions): OfflineAuthenticator {
  const limit = options.cacheSize ?? 10_000;
  const cache = new Map<string, VerifiedCapability>();
  let version = -1;
  let verifier: CapabilityVerifier | undefined;
  const revocations = options.revocations;
  let notBefore = revocations?.notBefore ?? 0;
  const listeners = new Set<() => void>();
  revocations?.onChange(() => {
    // A newer not_before means the key was rotated for a leak: the old key gets no grace.
    if (revocations.notBefore > notBefore) options.keys.retire?.();
    notBefore = revocations.notBefore;
    for (const listener of listeners) listener();
  });

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

  function notRevoked(capability: VerifiedCapability): VerifiedCapability {
    if (revocations?.isRevoked(capability.claims) === true) throw revoked();
    return capability;
  }

  function verify(token: string): VerifiedCapability {
    refuseApiKey(token);
    // First: a sandbox-wide revocation seen here retires the old key before it verifies anything.
    revocations?.refresh();
    const active = currentVerifier();
    const hit = cache.get(token);
    if (hit !== undefined) {
      if (hit.expiresAt.getTime() > options.now()) return notRevoked(hit);
      // Past exp the verifier decides again (it forgives bounded clock skew, the cache does not).
      cache.delete(token);
    }
    const verified = active.verify(token);
    if (cache.size >= limit) {
      const oldest = cache.keys().next();
      if (oldest.done !== true) cache.delete(oldest.value);
    }
    cache.set(token, verified);
    return notRevoked(verified);
  }

  return {
    onRevocation(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    authenticate(token: string): VerifiedCapability {
      try {
        return verify(token);
      } catch (err) {
        options.metrics?.authFailed(refusalReason(err));
        throw err;
      }
    },
  };
}
