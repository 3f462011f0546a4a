// Window counters for frequent, cheap requests (the rate limiter's `session` bucket): a
// request is counted here first and the store learns of it a moment later, in batches,
// so a request does not wait for a coordination round trip. The first request of a
// window in this process waits for the store (it learns what other instances counted);
// later ones use what the store last answered plus this process's own count since.
// Within one process the count is exact; across instances a limit may be overshot by
// what the others served since they last reported (about FLUSH_DELAY_MS of traffic).
import type { Logger } from '@sbx/service-kit';
import type { Coordination, CounterWindow } from '../../adapters/redis/coordination.js';

/** How long increments gather before they go to the store together. */
const FLUSH_DELAY_MS = 20;
const MAX_KEYS = 10_000;

interface KeyWindow {
  /** The store's count when it last answered, this process's reported increments included. */
  known: number;
  /** Increments counted here and not yet reported to the store. */
  pending: number;
  endsAt: number;
  flushing: boolean;
}

export class LocalFirstCounters {
  readonly #windows = new Map<string, KeyWindow>();

  constructor(
    private readonly coordination: Coordination,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request in `key`'s window; the count may be this process's estimate. */
  async incr(key: string, windowMs: number): Promise<CounterWindow> {
    const now = this.now();
    const window = this.#windows.get(key);
    if (window === undefined || window.endsAt <= now) return this.#open(key, windowMs);
    window.pending += 1;
    this.#scheduleFlush(key, window, windowMs);
    return { count: window.known + window.pending, ttlMs: window.endsAt - now };
  }

  async #open(key: string, windowMs: number): Promise<CounterWindow> {
    const counted = await this.coordination.incr(key, windowMs);
    if (this.#windows.size >= MAX_KEYS) this.#evictEnded();
    this.#windows.set(key, {
      known: counted.count,
      pending: 0,
      endsAt: this.now() + counted.ttlMs,
      flushing: false,
    });
    return counted;
  }

  #scheduleFlush(key: string, window: KeyWindow, windowMs: number): void {
    if (window.flushing) return;
    window.flushing = true;
    setTimeout(() => void this.#flush(key, window, windowMs), FLUSH_DELAY_MS).unref();
  }

  async #flush(key: string, window: KeyWindow, windowMs: number): Promise<void> {
    const by = window.pending;
    window.pending = 0;
    try {
      // Increments of a window that ended meanwhile belong to no window the store still has.
      if (by > 0 && window.endsAt > this.now()) {
        const counted = await this.coordination.incr(key, windowMs, by);
        window.known = counted.count;
      }
    } catch (err) {
      this.logger.warn({ err }, 'rate limit counts not shared: coordination store unavailable');
    } finally {
      window.flushing = false;
      if (window.pending > 0) this.#scheduleFlush(key, window, windowMs);
    }
  }

  #evictEnded(): void {
    const now = this.now();
    for (const [key, window] of this.#windows) if (window.endsAt <= now) this.#windows.delete(key);
    // Still full of live windows: forget the oldest (it will ask the store again).
    const oldest = this.#windows.keys().next();
    if (this.#windows.size >= MAX_KEYS && oldest.done !== true) this.#windows.delete(oldest.value);
  }
}
