import { SbxError, type ErrorCode, type SbxErrorOptions } from '@sbx/protocol';

export interface ClientErrorOptions extends SbxErrorOptions {
  readonly httpStatus?: number;
  readonly closeCode?: number;
}

/**
 * The one base of the SDK's errors (itself an `SbxError`, so code that already handles
 * the platform's error type keeps working). Every class fixes its own protocol code in
 * its static `code`: the constructor reads it, so no caller can build a `NotFoundError`
 * that says CONFLICT. `clientError(code, …)` picks the class when the code is only known
 * at run time (an error envelope).
 */
export class SbxClientError extends SbxError {
  /** The code of this class's errors; an SDK error that no narrower class describes is INTERNAL. */
  static readonly code: ErrorCode = 'INTERNAL';
  /** The HTTP status actually received, when the error came from an HTTP answer. */
  readonly httpStatus: number | undefined;
  /** The WebSocket close code, when the error came from a closed socket. */
  readonly closeCode: number | undefined;

  constructor(message: string, options: ClientErrorOptions = {}) {
    super(new.target.code, message, options);
    // SbxError types `name` as the literal 'SbxError'; each class here reports its own.
    Object.defineProperty(this, 'name', { value: new.target.name, configurable: true, enumerable: false });
    this.httpStatus = options.httpStatus;
    this.closeCode = options.closeCode;
  }
}
