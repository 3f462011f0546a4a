import { SbxClientError, SecurityError } from './errors.js';

/**
 * Exponential backoff with full jitter (the delay is uniform in [0, cap], cap doubling per
 * attempt up to `maxDelayMs`), for 423, 429, 503/504 and transport failures. A server's
 * `Retry-After` is honoured as a lower bound. Security rejections are never retried.
 */
export interface RetryPolicy {
  /**
   * Attempts in total, the first included (1 = no retry). A shell or a watch that drops
   * makes up to this many reconnect attempts before it gives up (see Reconnector).
   */
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Uniform in [0, 1); injectable so a test can pin the jitter. */
  readonly random?: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: 5,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
});

/** Whether an error may succeed when the same request is sent again. */
export function isRetryable(err: unknown): boolean {
  if (err instanceof SecurityError) return false;
  return err instanceof SbxClientError && err.retryable;
}

export function backoffDelayMs(attempt: number, policy: RetryPolicy, retryAfterSeconds?: number): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.floor((policy.random ?? Math.random)() * cap);
  if (retryAfterSeconds === undefined) return jittered;
  return Math.max(retryAfterSeconds * 1000, jittered);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException('the operation was aborted', 'AbortError');
}

/**
 * Runs `attempt` until it succeeds, fails for good, or the policy's attempts are used up.
 * `canRetry` narrows further (e.g. a request whose body was a stream cannot be resent).
 */
export async function withRetry<T>(
  attempt: (n: number) => Promise<T>,
  policy: RetryPolicy,
  signal?: AbortSignal,
  canRetry: (err: unknown) => boolean = isRetryable,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (n >= policy.maxAttempts || signal?.aborted === true || !canRetry(err)) throw err;
      const retryAfter = err instanceof SbxClientError ? err.retryAfterSeconds : undefined;
      await sleep(backoffDelayMs(n, policy, retryAfter), signal);
    }
  }
}
