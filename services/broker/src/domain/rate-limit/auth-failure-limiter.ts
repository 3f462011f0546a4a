// Failed credential attempts per client address (docs/security.md, "Hardening").
// Only failures are limited: a credential is always verified, a valid one is
// served whatever its address did, and past `maxFailures` failures in a window
// every further failure from the address answers 429 with Retry-After (the rest
// of the window) instead of 401: the same answer whatever the credential was, so
// a wrong guess tells nothing about why it was wrong, and costs what a guess
// under the limit costs (one key lookup) without a log line per guess: one
// warning marks the window's first refusal (the burst). Counted in the
// coordination store, so broker instances sharing Redis share the count; a store
// that cannot be reached lets requests through (logged).
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';

export interface AuthFailureLimits {
  /** Failures an address may make per window before its failures answer 429 (default 20). */
  readonly maxFailures: number;
  /** Default 60 000. */
  readonly windowMs: number;
}

export const DEFAULT_AUTH_FAILURE_LIMITS: AuthFailureLimits = Object.freeze({
  maxFailures: 20,
  windowMs: 60_000,
});

function refusal(retryAfterMs: number): SbxError {
  return new SbxError('RATE_LIMITED', 'too many failed authentication attempts from this address', {
    retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)),
  });
}

export class AuthFailureLimiter {
  constructor(
    private readonly coordination: Coordination,
    private readonly limits: AuthFailureLimits,
    private readonly logger: Logger,
  ) {}

  /** JSON keeps IPv6 addresses' ':' from colliding with the separator. */
  #key(address: string): string {
    return `authfail:count:${JSON.stringify(address)}`;
  }

  /**
   * Counts one failed attempt; RATE_LIMITED (to answer instead of the failure) once the
   * address is past its limit. Logs one warning per burst: the window's first refusal.
   */
  async recordFailure(address: string): Promise<SbxError | undefined> {
    let window;
    try {
      window = await this.coordination.incr(this.#key(address), this.limits.windowMs);
    } catch (err) {
      this.logger.warn({ err }, 'auth failure limit not enforced: coordination store unavailable');
      return undefined;
    }
    if (window.count <= this.limits.maxFailures) return undefined;
    const ttlMs = Math.max(1, window.ttlMs);
    if (window.count === this.limits.maxFailures + 1) {
      this.logger.warn(
        {
          address,
          failures: window.count,
          windowSeconds: Math.round(this.limits.windowMs / 1000),
          retryAfterSeconds: Math.ceil(ttlMs / 1000),
        },
        'failed authentication attempts over the limit: failures answered 429 until the window ends',
      );
    }
    return refusal(ttlMs);
  }
}
