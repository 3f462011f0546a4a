// The two route families name the same failures differently: MVP routes speak
// SESSION_*, the full protocol and the thread routes BINDING_* (session seed,
// "Recommended HTTP/code mapping"). Both share SESSION_EXPIRED and SANDBOX_STARTING.
import { SbxError } from '@sbx/protocol';

export type ErrorFamily = 'session' | 'binding';

export function notFound(family: ErrorFamily, message: string): SbxError {
  return new SbxError(family === 'session' ? 'SESSION_NOT_FOUND' : 'BINDING_NOT_FOUND', message);
}

export function conflict(family: ErrorFamily, message: string): SbxError {
  return new SbxError(family === 'session' ? 'SESSION_CONFLICT' : 'BINDING_CONFLICT', message);
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

/** A provider failure as the protocol's 503, keeping the provider's own message when it has one. */
export function providerFailure(err: unknown): SbxError {
  const message =
    err instanceof SbxError && err.code === 'PROVIDER_UNAVAILABLE'
      ? err.message
      : 'the sandbox provider could not start the sandbox';
  return new SbxError('PROVIDER_UNAVAILABLE', message, { cause: err, retryAfterSeconds: 5 });
}
