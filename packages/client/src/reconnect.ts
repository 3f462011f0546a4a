import { SecurityError } from './errors.js';
import { backoffDelayMs, sleep, type RetryPolicy } from './retry.js';

/** A rejected token or a thing that no longer exists (shell, watched path) will not come back by trying again. */
export function reconnectWorthTrying(err: unknown): boolean {
  if (err instanceof SecurityError) return false;
  if (err instanceof Error && err.name === 'AbortError') return false;
  return !(err instanceof Error && 'code' in err && err.code === 'NOT_FOUND');
}

/**
 * Opens a dropped connection again with exponential backoff and jitter until `connect`
 * succeeds, fails for good, or the policy's attempts are used up. `connect` gets a fresh
 * token by itself: `openChannel` asks the token source, which refreshes an expired one.
 */
export async function reconnectWithBackoff(
  connect: () => Promise<void>,
  retry: RetryPolicy,
  signal?: AbortSignal,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await connect();
      return;
    } catch (err) {
      if (!reconnectWorthTrying(err) || attempt >= retry.maxAttempts || signal?.aborted === true) throw err;
      await sleep(backoffDelayMs(attempt, retry), signal);
    }
  }
}
