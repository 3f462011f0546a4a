import { z } from 'zod';

/** The closed set of error codes every service and client speaks. */
export const ERROR_CODES = [
  'BAD_REQUEST',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'CAPABILITY_DENIED',
  'NOT_FOUND',
  'SESSION_NOT_FOUND',
  'BINDING_NOT_FOUND',
  'SANDBOX_NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'SESSION_CONFLICT',
  'BINDING_CONFLICT',
  'SESSION_EXPIRED',
  'PRECONDITION_FAILED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RANGE_NOT_SATISFIABLE',
  'IDEMPOTENCY_KEY_REUSED',
  'SANDBOX_STARTING',
  'RATE_LIMITED',
  'INTERNAL',
  'PROVIDER_UNAVAILABLE',
  'BACKEND_UNAVAILABLE',
  'TIMEOUT',
  'INSUFFICIENT_STORAGE',
] as const;

export const ErrorCode = z.enum(ERROR_CODES);
export type ErrorCode = z.infer<typeof ErrorCode>;

interface ErrorCodeInfo {
  readonly status: number;
  readonly retryable: boolean;
}

/**
 * The one table from code to HTTP status. `satisfies Record<ErrorCode, …>`
 * makes the compiler reject a code that has no row.
 */
export const ERROR_TABLE = {
  BAD_REQUEST: { status: 400, retryable: false },
  UNAUTHENTICATED: { status: 401, retryable: false },
  FORBIDDEN: { status: 403, retryable: false },
  CAPABILITY_DENIED: { status: 403, retryable: false },
  NOT_FOUND: { status: 404, retryable: false },
  SESSION_NOT_FOUND: { status: 404, retryable: false },
  BINDING_NOT_FOUND: { status: 404, retryable: false },
  SANDBOX_NOT_FOUND: { status: 404, retryable: false },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false },
  CONFLICT: { status: 409, retryable: false },
  SESSION_CONFLICT: { status: 409, retryable: false },
  BINDING_CONFLICT: { status: 409, retryable: false },
  SESSION_EXPIRED: { status: 410, retryable: false },
  PRECONDITION_FAILED: { status: 412, retryable: false },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false },
  RANGE_NOT_SATISFIABLE: { status: 416, retryable: false },
  IDEMPOTENCY_KEY_REUSED: { status: 422, retryable: false },
  SANDBOX_STARTING: { status: 423, retryable: true },
  RATE_LIMITED: { status: 429, retryable: true },
  INTERNAL: { status: 500, retryable: false },
  PROVIDER_UNAVAILABLE: { status: 503, retryable: true },
  BACKEND_UNAVAILABLE: { status: 503, retryable: true },
  TIMEOUT: { status: 504, retryable: true },
  INSUFFICIENT_STORAGE: { status: 507, retryable: false },
} as const satisfies Record<ErrorCode, ErrorCodeInfo>;

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].status;
}

/** `{error:{code,message,retryable,request_id}}`, the same in HTTP bodies and WebSocket frames. */
export const ErrorBody = z.object({
  code: ErrorCode,
  message: z.string(),
  retryable: z.boolean(),
  request_id: z.string().optional(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export const ErrorEnvelope = z.object({ error: ErrorBody });
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
