import { ERROR_CODES, SbxError, type ErrorCode, type SbxErrorOptions } from '@sbx/protocol';

/**
 * The SDK's errors: `SbxClientError` is the one base (itself an `SbxError`, so code that
 * already handles the platform's error type keeps working), with one subclass per
 * protocol error code. Authentication and authorization rejections additionally extend
 * `SecurityError`: the SDK never retries them (invite-architecture seed: 403/1008 raise a
 * security violation at once).
 */
export class SbxClientError extends SbxError {
  /** The HTTP status actually received, when the error came from an HTTP answer. */
  readonly httpStatus: number | undefined;
  /** The WebSocket close code, when the error came from a closed socket. */
  readonly closeCode: number | undefined;

  constructor(code: ErrorCode, message: string, options: ClientErrorOptions = {}) {
    super(code, message, options);
    // SbxError types `name` as the literal 'SbxError'; each class here reports its own.
    Object.defineProperty(this, 'name', { value: new.target.name, configurable: true, enumerable: false });
    this.httpStatus = options.httpStatus;
    this.closeCode = options.closeCode;
  }
}

export interface ClientErrorOptions extends SbxErrorOptions {
  readonly httpStatus?: number;
  readonly closeCode?: number;
}

/** A rejected credential or a missing right. Never retried: fix the key, token or grant. */
export class SecurityError extends SbxClientError {}

export class BadRequestError extends SbxClientError {}
export class UnauthenticatedError extends SecurityError {}
export class ForbiddenError extends SecurityError {}
export class CapabilityDeniedError extends SecurityError {}
export class NotFoundError extends SbxClientError {}
export class SessionNotFoundError extends NotFoundError {}
export class BindingNotFoundError extends NotFoundError {}
export class SandboxNotFoundError extends NotFoundError {}
export class MethodNotAllowedError extends SbxClientError {}
export class ConflictError extends SbxClientError {}
export class SessionConflictError extends ConflictError {}
export class BindingConflictError extends ConflictError {}
export class SessionExpiredError extends SbxClientError {}
export class PreconditionFailedError extends SbxClientError {}
export class PayloadTooLargeError extends SbxClientError {}
export class RangeNotSatisfiableError extends SbxClientError {}
export class IdempotencyKeyReusedError extends SbxClientError {}
export class SandboxStartingError extends SbxClientError {}
export class RateLimitedError extends SbxClientError {}
export class InternalError extends SbxClientError {}
export class ProviderUnavailableError extends SbxClientError {}
export class BackendUnavailableError extends SbxClientError {}
export class TimeoutError extends SbxClientError {}
export class InsufficientStorageError extends SbxClientError {}

type ErrorClass = new (code: ErrorCode, message: string, options?: ClientErrorOptions) => SbxClientError;

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
  return new ErrorType(code, message, options);
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}
