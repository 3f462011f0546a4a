// Fixed-window rate limits per principal, counted in the coordination store so
// every broker instance sharing Redis counts the same window. A store that
// cannot be reached lets requests through (logged): losing rate limiting for a
// while is better than refusing every negotiation because Redis blinked.
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import type { BrokerMetrics } from '../metrics/broker-metrics.js';
import { LocalFirstCounters } from './local-first-counters.js';

/** Negotiations may create sandboxes; the other session calls are cheap and frequent. */
export type RateLimitBucket = 'negotiate' | 'session';

export interface RateLimits {
  /** Requests per window for each bucket. */
  readonly perWindow: Readonly<Record<RateLimitBucket, number>>;
  /** Default 60 000 (one minute). */
  readonly windowMs?: number;
}

export const DEFAULT_RATE_LIMITS: RateLimits = Object.freeze({
  perWindow: Object.freeze({ negotiate: 600, session: 6000 }),
  windowMs: 60_000,
});

export interface RateLimitSubject {
  readonly tenantId: string;
  readonly principalId: string;
}

export type RateLimitVerdict =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      /** 429 RATE_LIMITED with `retryAfterSeconds`: the time left in the window. */
      readonly error: SbxError;
      /** The first refused request of a window (worth an audit row; the rest are not). */
      readonly firstRefusal: boolean;
    };

export class RateLimiter {
  readonly #windowMs: number;
  /**
   * The `session` bucket is counted locally first (local-first-counters.ts): its calls are
   * the hot path and its limit is large. Negotiations, which may create sandboxes, always
   * wait for the shared count, so their limit holds exactly across instances.
   */
  readonly #sessionCounters: LocalFirstCounters;

  constructor(
    private readonly coordination: Coordination,
    private readonly limits: RateLimits,
    private readonly logger: Logger,
    private readonly metrics?: Pick<BrokerMetrics, 'rateLimited'>,
  ) {
    this.#windowMs = limits.windowMs ?? 60_000;
    this.#sessionCounters = new LocalFirstCounters(coordination, logger);
  }

  /** Counts one request of the principal in the bucket's current window. */
  async take(bucket: RateLimitBucket, subject: RateLimitSubject): Promise<RateLimitVerdict> {
    const limit = this.limits.perWindow[bucket];
    // JSON keeps ids containing ':' from colliding with the separators.
    const key = `rl:${bucket}:${JSON.stringify([subject.tenantId, subject.principalId])}`;
    let window;
    try {
      window =
        bucket === 'session'
          ? await this.#sessionCounters.incr(key, this.#windowMs)
          : await this.coordination.incr(key, this.#windowMs);
    } catch (err) {
      this.logger.warn({ err, bucket }, 'rate limit not enforced: coordination store unavailable');
      return { allowed: true };
    }
    if (window.count <= limit) return { allowed: true };
    this.metrics?.rateLimited(bucket);
    const seconds = Math.round(this.#windowMs / 1000);
    const error = new SbxError('RATE_LIMITED', `rate limit of ${limit} requests per ${seconds} s exceeded`, {
      retryAfterSeconds: Math.max(1, Math.ceil(window.ttlMs / 1000)),
    });
    return { allowed: false, error, firstRefusal: window.count === limit + 1 };
  }
}
