import { ERROR_TABLE, type ErrorCode, type ErrorEnvelope } from './errors.js';

export interface SbxErrorOptions {
  readonly cause?: unknown;
  readonly details?: Record<string, unknown>;
  /** Seconds a client should wait before retrying (Retry-After). */
  readonly retryAfterSeconds?: number;
}

/** The one error type of the platform: a code from the closed set, a message a user can act on. */
export class SbxError extends Error {
  override readonly name = 'SbxError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: SbxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get status(): number {
    return ERROR_TABLE[this.code].status;
  }

  get retryable(): boolean {
    return ERROR_TABLE[this.code].retryable;
  }

  /** Unknown throws become INTERNAL with the cause kept for logs, never for the response. */
  static from(err: unknown): SbxError {
    if (err instanceof SbxError) return err;
    return new SbxError('INTERNAL', 'internal error', { cause: err });
  }

  toEnvelope(requestId?: string): ErrorEnvelope {
    return {
      error: {
        code: this.code,
        message: this.message,
        retryable: this.retryable,
        ...(requestId === undefined ? {} : { request_id: requestId }),
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}
