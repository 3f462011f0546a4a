// The one place where the MVP's error names are spoken. The domain raises
// binding errors (BINDING_NOT_FOUND, BINDING_CONFLICT); the MVP routes
// (docs/protocol.md#mvp-routes) promise their clients SESSION_NOT_FOUND and
// SESSION_CONFLICT for the same failures. Everything else (SESSION_EXPIRED,
// SANDBOX_STARTING, CAPABILITY_DENIED …) reads the same on every route family, and status,
// message, details and Retry-After never change: only the code is renamed.
import type { Request, RequestHandler, Response } from 'express';
import { SbxError, type ErrorCode } from '@sbx/protocol';

/** Domain code → the MVP's name for it. A code without a row passes through unchanged. */
export const MVP_ERROR_CODES: Readonly<Partial<Record<ErrorCode, ErrorCode>>> = Object.freeze({
  BINDING_NOT_FOUND: 'SESSION_NOT_FOUND',
  BINDING_CONFLICT: 'SESSION_CONFLICT',
});

/** `err` as an MVP client must see it; anything that is not a renamed SbxError is returned as is. */
export function toMvpError(err: unknown): unknown {
  if (!(err instanceof SbxError)) return err;
  const code = MVP_ERROR_CODES[err.code];
  if (code === undefined) return err;
  return new SbxError(code, err.message, {
    cause: err,
    ...(err.details === undefined ? {} : { details: err.details }),
    ...(err.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: err.retryAfterSeconds }),
  });
}

/** Runs `work` and rethrows its failure in the MVP's names. */
export async function inMvpTerms<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toMvpError(err);
  }
}

/** A route handler of an MVP-only route: whatever it throws leaves in the MVP's names. */
export function mvpRoute(handler: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return (req, res) => inMvpTerms(() => handler(req, res));
}
