// A token bucket: `perMinute` requests, refilled continuously, full at start.
// It bounds the JWKS fetches that tokens with made-up key ids can cause.
import type { Clock } from '@sbx/tokens';

export class RequestBudget {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
  ) {
    if (!Number.isSafeInteger(perMinute) || perMinute < 1) {
      throw new RangeError('requests per minute must be a whole number of at least 1');
    }
    this.tokens = perMinute;
    this.updatedAt = clock();
  }

  /** Spends one request when one is left; false means "not now". */
  take(): boolean {
    const now = this.clock();
    const refill = (Math.max(0, now - this.updatedAt) * this.perMinute) / 60_000;
    this.tokens = Math.min(this.perMinute, this.tokens + refill);
    this.updatedAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
