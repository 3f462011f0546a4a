// A refusal of the token endpoint, answered in the RFC 6749 §5.2 shape
// (`{error, error_description}`), not the broker's error envelope: that is what
// OAuth clients parse (docs/architecture.md D19).
import { oauthErrorStatus, type OAuthErrorCode, type OAuthErrorResponse } from '@sbx/protocol';

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;

  constructor(code: OAuthErrorCode, description: string, options?: { readonly cause?: unknown }) {
    super(description, options);
    this.name = 'OAuthError';
    this.code = code;
  }

  get status(): 400 | 401 {
    return oauthErrorStatus(this.code);
  }

  toJSON(): OAuthErrorResponse {
    return { error: this.code, error_description: this.message };
  }
}
