import { NotFoundError, SessionExpiredError, TransportError, UnauthenticatedError } from '@sbx/client';

/** 404 SESSION_NOT_FOUND / BINDING_NOT_FOUND or 410 SESSION_EXPIRED from the broker's session routes. */
export const isGone = (err: unknown): boolean =>
  err instanceof NotFoundError || err instanceof SessionExpiredError;

/**
 * Why a cached binding stopped working, read from the failure it caused (docs/sessions.md,
 * "CLI cache and renegotiation"):
 * - `gone`: the broker's refresh answered 404 (unknown binding) or 410 (released, or its
 *   sandbox ended). That sandbox is not coming back: ensure without it as the hint.
 * - `rejected`: the agent refused the token (401, WebSocket close 1008, 4401 expired):
 *   tampered, expired, or for another sandbox. Ensure with the cached id as the hint.
 * - `unreachable`: connection refused, unknown or unreachable host: the request never
 *   arrived, so running it again is safe. The hint lets the broker resume a suspended one.
 * Anything else is an answer: a 403 (a real refusal), a missing file, a timeout or reset
 * (the request may have run), the broker's own 401.
 */
export type Staleness = 'gone' | 'rejected' | 'unreachable';

/** Errors of the broker's refresh route: a broker 401 is a bad login, not a stale token. */
export const brokerErrors = new WeakSet<object>();

const NEVER_ARRIVED: readonly string[] = ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH'];

/** Whether a transport failure happened before the request reached anyone (its causes say). */
function neverArrived(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  if ('code' in err && typeof err.code === 'string' && NEVER_ARRIVED.includes(err.code)) return true;
  if (err instanceof AggregateError && err.errors.length > 0) {
    return err.errors.every((each) => neverArrived(each, depth + 1));
  }
  return 'cause' in err && neverArrived(err.cause, depth + 1);
}

export function stalenessOf(err: unknown): Staleness | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  if (brokerErrors.has(err)) return isGone(err) ? 'gone' : undefined;
  if (err instanceof UnauthenticatedError || err instanceof SessionExpiredError) return 'rejected';
  if (err instanceof TransportError && neverArrived(err.cause)) return 'unreachable';
  return undefined;
}
