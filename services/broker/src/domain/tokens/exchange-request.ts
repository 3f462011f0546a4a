// The parameters of a token exchange that need no lookup: the grant, the
// token types, the scopes asked for (⊆ the subject's, with implication) and
// the lifetime (≤ what the subject has left). Each refusal has its RFC code.
import {
  CAPABILITY_TOKEN_TYPE,
  CAPABILITY_TOKEN_TYPES,
  isWithin,
  parseScopeString,
  strongestScopes,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type CapabilityScope,
  type TokenExchangeRequest,
  type TokenExchangeResponse,
} from '@sbx/protocol';
import { OAuthError } from './oauth-error.js';

const TOKEN_TYPES: readonly string[] = CAPABILITY_TOKEN_TYPES;
type IssuedTokenType = TokenExchangeResponse['issued_token_type'];

function isTokenType(value: string): value is IssuedTokenType {
  return TOKEN_TYPES.includes(value);
}

/** The grant and the token types; returns the type to issue. */
export function checkRequestShape(request: TokenExchangeRequest): IssuedTokenType {
  if (request.grant_type !== TOKEN_EXCHANGE_GRANT_TYPE) {
    throw new OAuthError('unsupported_grant_type', `grant_type must be ${TOKEN_EXCHANGE_GRANT_TYPE}`);
  }
  if (!isTokenType(request.subject_token_type)) {
    throw new OAuthError('invalid_request', `subject_token_type must be one of ${TOKEN_TYPES.join(', ')}`);
  }
  const wanted = request.requested_token_type ?? CAPABILITY_TOKEN_TYPE;
  if (!isTokenType(wanted)) {
    throw new OAuthError('invalid_request', `requested_token_type must be one of ${TOKEN_TYPES.join(', ')}`);
  }
  if (request.resource !== undefined) {
    throw new OAuthError('invalid_target', 'resource is not supported; name the sandbox with audience');
  }
  return wanted;
}

/** Absent: the subject's scopes. Each named scope must be granted by the subject, directly or implied. */
export function requestedScopes(
  scope: string | undefined,
  granted: readonly CapabilityScope[],
): CapabilityScope[] {
  if (scope === undefined) return [...granted];
  const { scopes, unknown } = parseScopeString(scope);
  if (unknown.length > 0) throw new OAuthError('invalid_scope', `unknown scope: ${unknown.join(', ')}`);
  if (scopes.length === 0) throw new OAuthError('invalid_scope', 'scope names no capability');
  if (!isWithin(scopes, granted)) {
    throw new OAuthError('invalid_scope', `scope exceeds the subject_token's (${granted.join(' ')})`);
  }
  return strongestScopes(scopes);
}

/** Absent: the rest of the subject's life. More than that is refused, never clamped silently. */
export function requestedLifetime(expiresIn: string | undefined, remainingSeconds: number): number {
  if (expiresIn === undefined) return remainingSeconds;
  const wanted = Number(expiresIn);
  if (wanted > remainingSeconds) {
    throw new OAuthError(
      'invalid_request',
      `expires_in exceeds the subject_token's remaining lifetime (${remainingSeconds} s)`,
    );
  }
  return wanted;
}
