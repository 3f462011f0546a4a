// OAuth 2.0 Token Exchange (RFC 8693) on the broker's `POST /oauth/token`
// (docs/protocol.md#token-exchange). The request is a form
// (application/x-www-form-urlencoded); the answer is JSON, errors in the
// RFC 6749 §5.2 shape rather than the broker's own error envelope.
import { z } from 'zod';

export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** Our own token type URI: a capability token (`typ: sbx-cap+jwt`). What the broker issues by default. */
export const CAPABILITY_TOKEN_TYPE = 'urn:sbx:params:oauth:token-type:capability';
/** RFC 8693 §3: any JWT. A capability token is one, so it is accepted as a subject and may be requested. */
export const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
/** RFC 8693 §3: an access token of the broker API (API key or OIDC access token): the actor's type. */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** Types a subject token may be presented as, and types the broker may issue. */
export const CAPABILITY_TOKEN_TYPES = [CAPABILITY_TOKEN_TYPE, JWT_TOKEN_TYPE] as const;

export const OAUTH_ERROR_CODES = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'invalid_scope',
  'invalid_target',
  'unsupported_grant_type',
] as const;
export const OAuthErrorCode = z.enum(OAUTH_ERROR_CODES);
export type OAuthErrorCode = z.infer<typeof OAuthErrorCode>;

/** RFC 6749 §5.2. `invalid_client` is 401, every other code 400. */
export const OAuthErrorResponse = z.object({
  error: OAuthErrorCode,
  error_description: z.string().optional(),
});
export type OAuthErrorResponse = z.infer<typeof OAuthErrorResponse>;

export function oauthErrorStatus(code: OAuthErrorCode): 400 | 401 {
  return code === 'invalid_client' ? 401 : 400;
}

const Text = z.string().min(1).max(4096);

/**
 * The form fields (each once; unknown ones are ignored, RFC 6749 §3.2). Checks of meaning
 * (which grant, which types, the scope names) are the token endpoint's, so each refusal
 * gets its RFC error code.
 */
export const TokenExchangeRequest = z.object({
  grant_type: Text,
  subject_token: Text,
  subject_token_type: Text,
  requested_token_type: Text.optional(),
  /** Space-separated capability scopes; absent: the subject's own. */
  scope: z.string().max(1024).optional(),
  /** The sandbox id; must be the subject's sandbox. */
  audience: Text.optional(),
  /** RFC 8693 `resource`: not supported (the audience names the sandbox). */
  resource: Text.optional(),
  actor_token: Text.optional(),
  actor_token_type: Text.optional(),
  /** Extension: the lifetime wanted, in seconds; at most the subject's remaining lifetime. */
  expires_in: z
    .string()
    .regex(/^[1-9][0-9]{0,5}$/, { message: 'must be a positive whole number of seconds' })
    .optional(),
});
export type TokenExchangeRequest = z.infer<typeof TokenExchangeRequest>;

export const TokenExchangeResponse = z.object({
  access_token: z.string(),
  issued_token_type: z.enum(CAPABILITY_TOKEN_TYPES),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int().positive(),
  scope: z.string(),
});
export type TokenExchangeResponse = z.infer<typeof TokenExchangeResponse>;

/** RFC 7662 introspection request (opaque-token mode, docs/protocol.md#opaque-tokens). */
export const IntrospectionRequest = z.object({
  token: Text,
  token_type_hint: Text.optional(),
});
export type IntrospectionRequest = z.infer<typeof IntrospectionRequest>;

/** `{active: false}` alone for any token that is not a live one of the caller's sandbox. */
export const IntrospectionResponse = z.object({
  active: z.boolean(),
  scope: z.string().optional(),
  token_type: z.literal('Bearer').optional(),
  client_id: z.string().optional(),
  iss: z.string().optional(),
  sub: z.string().optional(),
  aud: z.string().optional(),
  jti: z.string().optional(),
  iat: z.number().int().optional(),
  exp: z.number().int().optional(),
  session_id: z.string().optional(),
  thread_id: z.string().optional(),
});
export type IntrospectionResponse = z.infer<typeof IntrospectionResponse>;
