// A request sent again the way the SDK sends it (packages/client/src/retry.ts): an answer
// whose error envelope says `retryable: true` (423 a sandbox still starting, 429, 503 a
// provider that could not start the sandbox in time on a loaded host, 504) is sent again
// after an exponential backoff with full jitter, never sooner than its Retry-After. Any
// other answer is the caller's to check. Where the SDK gives up after 5 attempts or 30 s,
// this waits up to a generous ceiling: these machines are small and shared.

/** What supertest (or a test's own fetch wrapper) answers. */
export interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Readonly<Record<string, unknown>>;
}

/** The SDK's DEFAULT_RETRY_POLICY delays. */
const BASE_DELAY_MS = 200;
const MAX_DELAY_MS = 10_000;
export const SDK_RETRY_CEILING_MS = 120_000;

function isRetryable(answer: Answer): boolean {
  const { body } = answer;
  if (typeof body !== 'object' || body === null || !('error' in body)) return false;
  const { error } = body;
  return typeof error === 'object' && error !== null && 'retryable' in error && error.retryable === true;
}

function retryAfterMs(answer: Answer): number {
  const seconds = Number(answer.headers['retry-after']);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
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
    const cap = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
    const delay = Math.max(retryAfterMs(answer), Math.floor(Math.random() * cap));
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
