// Failed credential attempts per client address (docs/security.md, "Hardening").
// Past `maxFailures` failures in a window the address is refused with 429 and
// Retry-After until the window ends, before its credential is even looked up,
// so guessing API keys costs neither a database read per guess nor a log line
// per guess: one warning marks the first refusal of a window (the burst).
// Counted in the coordination store, so broker instances sharing Redis share
// the count; a store that cannot be reached lets requests through (logged).
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';

export interface AuthFailureLimits {
  /** Failures an address may make per window before it is refused (default 20). */
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
    private readonly now: () => number = Date.now,
  ) {}

  /** JSON keeps IPv6 addresses' ':' from colliding with the separators. */
  #key(kind: 'count' | 'block', address: string): string {
    return `authfail:${kind}:${JSON.stringify(address)}`;
  }

  /** RATE_LIMITED while the address is refused; undefined when it may try. */
  async refusalFor(address: string): Promise<SbxError | undefined> {
    let until: string | null;
    try {
      until = await this.coordination.get(this.#key('block', address));
    } catch (err) {
      this.logger.warn({ err }, 'auth failure limit not enforced: coordination store unavailable');
      return undefined;
    }
    if (until === null) return undefined;
    return refusal(Number(until) - this.now());
  }

  /**
   * Counts one failed attempt; RATE_LIMITED (to answer instead of the failure) once the
   * address is past its limit. Logs one warning per burst: the window's first refusal.
   */
  async recordFailure(address: string): Promise<SbxError | undefined> {
    let window;
    try {
      window = await this.coordination.incr(this.#key('count', address), this.limits.windowMs);
    } catch (err) {
      this.logger.warn({ err }, 'auth failure limit not enforced: coordination store unavailable');
      return undefined;
    }
    if (window.count <= this.limits.maxFailures) return undefined;
    const ttlMs = Math.max(1, window.ttlMs);
    if (window.count === this.limits.maxFailures + 1) {
      await this.coordination
        .set(this.#key('block', address), String(this.now() + ttlMs), ttlMs)
        .catch(() => undefined);
      this.logger.warn(
        {
          address,
          failures: window.count,
          windowSeconds: Math.round(this.limits.windowMs / 1000),
          retryAfterSeconds: Math.ceil(ttlMs / 1000),
        },
        'failed authentication attempts over the limit: address refused until the window ends',
      );
    }
    return refusal(ttlMs);
  }
}
