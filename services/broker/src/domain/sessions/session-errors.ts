// The domain's errors, in one vocabulary: bindings. A binding that is missing
// (or someone else's) is BINDING_NOT_FOUND, a scope or thread that already has
// what the request would create is BINDING_CONFLICT. The MVP routes rename
// those two for their clients, once, at the HTTP edge
// (http/sessions/mvp-error-codes.ts); the domain never knows which route asked.
import { SbxError } from '@sbx/protocol';

export function bindingNotFound(message: string): SbxError {
  return new SbxError('BINDING_NOT_FOUND', message);
}

export function bindingConflict(message: string): SbxError {
  return new SbxError('BINDING_CONFLICT', message);
}

export function sessionExpired(id: string): SbxError {
  return new SbxError('SESSION_EXPIRED', `session ${id} has been released or its sandbox has ended`);
}

/** Seconds a client is told to wait when a sandbox is still starting. */
export const STARTING_RETRY_AFTER_SECONDS = 2;

export function sandboxStarting(): SbxError {
  return new SbxError('SANDBOX_STARTING', 'the sandbox is still starting; retry shortly', {
    retryAfterSeconds: STARTING_RETRY_AFTER_SECONDS,
  });
}

/**
 * A provider failure as the protocol's 503, keeping the provider's own message when it has one.
 * A disk that cannot hold the workspace stays 507 INSUFFICIENT_STORAGE: retrying soon does not
 * help until someone frees space (found by reliability/disk/host-full.test.ts).
 */
export function providerFailure(err: unknown): SbxError {
  if (err instanceof SbxError && err.code === 'INSUFFICIENT_STORAGE') return err;
  const message =
    err instanceof SbxError && err.code === 'PROVIDER_UNAVAILABLE'
      ? err.message
      : 'the sandbox provider could not start the sandbox';
  return new SbxError('PROVIDER_UNAVAILABLE', message, { cause: err, retryAfterSeconds: 5 });
}
