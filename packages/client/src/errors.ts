import { ERROR_CODES, type ErrorCode } from '@sbx/protocol';
import type { ClientErrorOptions, SbxClientError } from './client-error.js';
import {
  BadRequestError,
  UnauthenticatedError,
  ForbiddenError,
  CapabilityDeniedError,
  NotFoundError,
  SessionNotFoundError,
  BindingNotFoundError,
  SandboxNotFoundError,
  MethodNotAllowedError,
  ConflictError,
  SessionConflictError,
  BindingConflictError,
  SessionExpiredError,
  PreconditionFailedError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  RangeNotSatisfiableError,
  IdempotencyKeyReusedError,
  SandboxStartingError,
  RateLimitedError,
  InternalError,
  ProviderUnavailableError,
  BackendUnavailableError,
  TimeoutError,
  InsufficientStorageError,
} from './error-classes.js';

/**
 * The SDK's errors: `SbxClientError` is the one base, with one subclass per protocol error
 * code. Authentication and authorization rejections additionally extend `SecurityError`:
 * the SDK never retries them (invite-architecture seed: 403/1008 raise a security violation
 * at once). An answer the SDK cannot read is a `ProtocolError` (protocol-error.ts).
 */
export * from './client-error.js';
export * from './error-classes.js';

interface ErrorClass {
  new (message: string, options?: ClientErrorOptions): SbxClientError;
  readonly code: ErrorCode;
}

/** The table from protocol code to class; `satisfies` makes a new code without a class a compile error. */
export const ERROR_CLASSES = {
  BAD_REQUEST: BadRequestError,
  UNAUTHENTICATED: UnauthenticatedError,
  FORBIDDEN: ForbiddenError,
  CAPABILITY_DENIED: CapabilityDeniedError,
  NOT_FOUND: NotFoundError,
  SESSION_NOT_FOUND: SessionNotFoundError,
  BINDING_NOT_FOUND: BindingNotFoundError,
  SANDBOX_NOT_FOUND: SandboxNotFoundError,
  METHOD_NOT_ALLOWED: MethodNotAllowedError,
  CONFLICT: ConflictError,
  SESSION_CONFLICT: SessionConflictError,
  BINDING_CONFLICT: BindingConflictError,
  SESSION_EXPIRED: SessionExpiredError,
  PRECONDITION_FAILED: PreconditionFailedError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  UNSUPPORTED_MEDIA_TYPE: UnsupportedMediaTypeError,
  RANGE_NOT_SATISFIABLE: RangeNotSatisfiableError,
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReusedError,
  SANDBOX_STARTING: SandboxStartingError,
  RATE_LIMITED: RateLimitedError,
  INTERNAL: InternalError,
  PROVIDER_UNAVAILABLE: ProviderUnavailableError,
  BACKEND_UNAVAILABLE: BackendUnavailableError,
  TIMEOUT: TimeoutError,
  INSUFFICIENT_STORAGE: InsufficientStorageError,
} as const satisfies Record<ErrorCode, ErrorClass>;

/** Builds the typed error for a code. */
export function clientError(
  code: ErrorCode,
  message: string,
  options: ClientErrorOptions = {},
): SbxClientError {
  const ErrorType: ErrorClass = ERROR_CLASSES[code];
  return new ErrorType(message, options);
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}
