import type { ErrorCode } from '@sbx/protocol';
import { SbxClientError } from './client-error.js';

// One class per protocol code. Each fixes its code in `static code` (typed `ErrorCode`, not
// the literal, so a subclass such as SessionNotFoundError may narrow NotFoundError's code).

/**
 * A rejected credential or a missing right. Never retried: fix the key, token or grant.
 * Thrown as such (e.g. by a `bearer` callback) it says FORBIDDEN; its subclasses say which.
 */
export class SecurityError extends SbxClientError {
  static override readonly code: ErrorCode = 'FORBIDDEN';
}

export class BadRequestError extends SbxClientError {
  static override readonly code: ErrorCode = 'BAD_REQUEST';
}

export class UnauthenticatedError extends SecurityError {
  static override readonly code: ErrorCode = 'UNAUTHENTICATED';
}

export class ForbiddenError extends SecurityError {
  static override readonly code: ErrorCode = 'FORBIDDEN';
}

export class CapabilityDeniedError extends SecurityError {
  static override readonly code: ErrorCode = 'CAPABILITY_DENIED';
}

export class NotFoundError extends SbxClientError {
  static override readonly code: ErrorCode = 'NOT_FOUND';
}

export class SessionNotFoundError extends NotFoundError {
  static override readonly code: ErrorCode = 'SESSION_NOT_FOUND';
}

export class BindingNotFoundError extends NotFoundError {
  static override readonly code: ErrorCode = 'BINDING_NOT_FOUND';
}

export class SandboxNotFoundError extends NotFoundError {
  static override readonly code: ErrorCode = 'SANDBOX_NOT_FOUND';
}

export class MethodNotAllowedError extends SbxClientError {
  static override readonly code: ErrorCode = 'METHOD_NOT_ALLOWED';
}

export class ConflictError extends SbxClientError {
  static override readonly code: ErrorCode = 'CONFLICT';
}

export class SessionConflictError extends ConflictError {
  static override readonly code: ErrorCode = 'SESSION_CONFLICT';
}

export class BindingConflictError extends ConflictError {
  static override readonly code: ErrorCode = 'BINDING_CONFLICT';
}

export class SessionExpiredError extends SbxClientError {
  static override readonly code: ErrorCode = 'SESSION_EXPIRED';
}

export class PreconditionFailedError extends SbxClientError {
  static override readonly code: ErrorCode = 'PRECONDITION_FAILED';
}

export class PayloadTooLargeError extends SbxClientError {
  static override readonly code: ErrorCode = 'PAYLOAD_TOO_LARGE';
}

/** A body sent without its media type (JSON without `Content-Type: application/json`). */
export class UnsupportedMediaTypeError extends SbxClientError {
  static override readonly code: ErrorCode = 'UNSUPPORTED_MEDIA_TYPE';
}

export class RangeNotSatisfiableError extends SbxClientError {
  static override readonly code: ErrorCode = 'RANGE_NOT_SATISFIABLE';
}

export class IdempotencyKeyReusedError extends SbxClientError {
  static override readonly code: ErrorCode = 'IDEMPOTENCY_KEY_REUSED';
}

export class SandboxStartingError extends SbxClientError {
  static override readonly code: ErrorCode = 'SANDBOX_STARTING';
}

export class RateLimitedError extends SbxClientError {
  static override readonly code: ErrorCode = 'RATE_LIMITED';
}

export class InternalError extends SbxClientError {
  static override readonly code: ErrorCode = 'INTERNAL';
}

export class ProviderUnavailableError extends SbxClientError {
  static override readonly code: ErrorCode = 'PROVIDER_UNAVAILABLE';
}

export class BackendUnavailableError extends SbxClientError {
  static override readonly code: ErrorCode = 'BACKEND_UNAVAILABLE';
}

export class TimeoutError extends SbxClientError {
  static override readonly code: ErrorCode = 'TIMEOUT';
}

export class InsufficientStorageError extends SbxClientError {
  static override readonly code: ErrorCode = 'INSUFFICIENT_STORAGE';
}
