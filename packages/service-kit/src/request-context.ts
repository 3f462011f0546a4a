// The request being served, for log lines written anywhere while serving it:
// assignRequestId runs the rest of the request in this context, and every
// logger made by createLogger adds `request_id` from it to its lines.
import { AsyncLocalStorage } from 'node:async_hooks';

const requestIds = new AsyncLocalStorage<string>();

/** The id of the request whose handling is running now, if any. */
export function currentRequestId(): string | undefined {
  return requestIds.getStore();
}

/** Runs `fn` (and what it starts) as part of the request `id`. */
export function runWithRequestId<T>(id: string, fn: () => T): T {
  return requestIds.run(id, fn);
}
