import { clientError, SbxClientError, SecurityError } from './errors.js';
import { sleep, type RetryPolicy } from './retry.js';

/**
 * How long a connection must stay open after its `start` was answered before it counts as
 * restored. An agent that answers `ready` and then drops every socket (1011, 1013) must not
 * be reconnected to forever: until a connection has lasted this long (or delivered data),
 * its reconnect still counts against the policy's attempts.
 */
export const STABLE_AFTER_MS = 5_000;

/** A rejected token or a thing that no longer exists (shell, watched path) will not come back by trying again. */
export function reconnectWorthTrying(err: unknown): boolean {
  if (err instanceof SecurityError) return false;
  if (err instanceof Error && err.name === 'AbortError') return false;
  return !(err instanceof Error && 'code' in err && err.code === 'NOT_FOUND');
}

/**
 * The wait before reconnect attempt `attempt` (1-based): "equal jitter", uniform in
 * [cap/2, cap] with the cap doubling per attempt up to `maxDelayMs`. Never zero, so even
 * the first retry waits and a fleet of clients does not reconnect in lockstep.
 */
export function reconnectDelayMs(attempt: number, policy: RetryPolicy): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.ceil(cap / 2 + (policy.random ?? Math.random)() * (cap / 2));
}

/**
 * Reopens a long-lived connection (a shell, a watch) after drops, with backoff and jitter.
 * Attempts are counted across connections that come up and fall again at once: the count
 * starts over only when a connection proves itself (`connected()` and still open after
 * STABLE_AFTER_MS, or `proven()` because it delivered data). After `maxAttempts` reconnect
 * attempts without that, it gives up with the last error, typed.
 */
export class Reconnector {
  #attempts = 0;
  #stableTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly retry: RetryPolicy,
    /** What reconnects, for messages ("shell sh_1"); read when giving up. */
    private readonly what: () => string,
  ) {}

  /** A connection's start was answered: if it stays up STABLE_AFTER_MS, the attempts start over. */
  connected(): void {
    this.dropped();
    this.#stableTimer = setTimeout(() => this.proven(), STABLE_AFTER_MS);
    this.#stableTimer.unref();
  }

  /** The connection delivered something: it works, so the attempts start over. */
  proven(): void {
    this.dropped();
    this.#attempts = 0;
  }

  /** The connection closed, or its owner ended: it will not become stable. */
  dropped(): void {
    clearTimeout(this.#stableTimer);
    this.#stableTimer = undefined;
  }

  /**
   * Waits, then calls `connect` (which resolves once the agent answered `start`) until it
   * succeeds, fails for good, `signal` aborts, or the attempts are used up. `dropError` is
   * why the connection closed, reported if no attempt gets further.
   */
  async reconnect(connect: () => Promise<void>, signal: AbortSignal, dropError?: Error): Promise<void> {
    this.dropped();
    let last: unknown = dropError;
    for (;;) {
      if (this.#attempts >= this.retry.maxAttempts) throw this.#gaveUp(last);
      this.#attempts++;
      await sleep(reconnectDelayMs(this.#attempts, this.retry), signal);
      try {
        await connect();
        return;
      } catch (err) {
        if (!reconnectWorthTrying(err) || signal.aborted) throw err;
        last = err;
      }
    }
  }

  #gaveUp(last: unknown): SbxClientError {
    const said = `${this.what()}: gave up after ${this.#attempts} reconnect attempts without a lasting connection`;
    if (!(last instanceof SbxClientError)) {
      const why = last instanceof Error ? ` (${last.message})` : '';
      return clientError('BACKEND_UNAVAILABLE', `${said}${why}`, { cause: last });
    }
    // The same type as the last failure (a RateLimitedError stays one), saying that retrying stopped.
    return clientError(last.code, `${said}: ${last.message}`, {
      cause: last,
      ...(last.closeCode === undefined ? {} : { closeCode: last.closeCode }),
      ...(last.details === undefined ? {} : { details: last.details }),
    });
  }
}
