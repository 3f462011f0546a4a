// A request sent again the way the SDK sends it (packages/client/src/retry.ts): an answer
// whose error envelope says `retryable: true` (423 a sandbox still starting, 429, 503 a
// provider that could not start the sandbox in time on a loaded host, 504) is sent again
// after the SDK's own backoff (its backoffDelayMs and default policy), never sooner than its
// Retry-After. Any other answer is the caller's to check. Where the SDK gives up after 5
// attempts or 30 s, this waits up to a generous ceiling: these machines are small and shared.
import { backoffDelayMs, DEFAULT_RETRY_POLICY } from '../../../../packages/client/src/retry.js';

/** What supertest (or a test's own fetch wrapper) answers. */
export interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Readonly<Record<string, unknown>>;
}

export const SDK_RETRY_CEILING_MS = 120_000;

function isRetryable(answer: Answer): boolean {
  const { body } = answer;
  if (typeof body !== 'object' || body === null || !('error' in body)) return false;
  const { error } = body;
  return typeof error === 'object' && error !== null && 'retryable' in error && error.retryable === true;
}

function retryAfterSeconds(answer: Answer): number | undefined {
  const seconds = Number(answer.headers['retry-after']);
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

/** `send()` until its answer is not a retryable refusal, or the ceiling has passed (then the last one). */
export async function retryLikeSdk<T extends Answer>(
  send: () => PromiseLike<T>,
  ceilingMs = SDK_RETRY_CEILING_MS,
): Promise<T> {
  const deadline = Date.now() + ceilingMs;
  for (let attempt = 1; ; attempt++) {
    const answer = await send();
    if (!isRetryable(answer) || Date.now() > deadline) return answer;
    const delay = backoffDelayMs(attempt, DEFAULT_RETRY_POLICY, retryAfterSeconds(answer));
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
