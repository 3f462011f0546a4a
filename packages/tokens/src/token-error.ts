import { SbxError, type ErrorCode } from '@sbx/protocol';

/** The closed set of reasons a token, signed URL or key is refused. */
export const TOKEN_ERROR_REASONS = [
  'missing',
  'malformed',
  'expired',
  'not_yet_valid',
  'bad_signature',
  'wrong_audience',
  'wrong_issuer',
  'wrong_type',
  'ttl_too_long',
  'unknown_scope',
  'insufficient_scope',
  'key_too_short',
] as const;
export type TokenErrorReason = (typeof TOKEN_ERROR_REASONS)[number];

const CODE_OF_REASON = {
  missing: 'UNAUTHENTICATED',
  malformed: 'UNAUTHENTICATED',
  expired: 'UNAUTHENTICATED',
  not_yet_valid: 'UNAUTHENTICATED',
  bad_signature: 'UNAUTHENTICATED',
  wrong_audience: 'UNAUTHENTICATED',
  wrong_issuer: 'UNAUTHENTICATED',
  wrong_type: 'UNAUTHENTICATED',
  ttl_too_long: 'UNAUTHENTICATED',
  unknown_scope: 'UNAUTHENTICATED',
  insufficient_scope: 'CAPABILITY_DENIED',
  key_too_short: 'UNAUTHENTICATED',
} as const satisfies Record<TokenErrorReason, ErrorCode>;

/**
 * A refused token. It is an SbxError already (so error middleware answers 401/403,
 * never 500); messages are written here and never quote the token text.
 */
export class TokenError extends SbxError {
  readonly reason: TokenErrorReason;

  constructor(reason: TokenErrorReason, message: string) {
    super(CODE_OF_REASON[reason], message, { details: { reason } });
    this.reason = reason;
  }

  /** A plain SbxError with the same code, message and `details.reason`. */
  toSbxError(): SbxError {
    return new SbxError(this.code, this.message, { details: { reason: this.reason } });
  }
}
