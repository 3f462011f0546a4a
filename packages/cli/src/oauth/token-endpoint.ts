import { SbxError } from '@sbx/protocol';
import { isRecord, issuerRequest, isUnavailableStatus, unexpectedAnswer } from './issuer-http.js';

/** A successful token response (RFC 6749 §5.1). */
export interface TokenResponse {
  readonly access_token: string;
  readonly expires_in?: number;
  readonly refresh_token?: string;
  readonly scope?: string;
}

/** Answers that mean "this login, code or client is not (or no longer) good": exit 3. */
const AUTH_ERRORS = new Set([
  'access_denied',
  'expired_token',
  'invalid_grant',
  'invalid_client',
  'unauthorized_client',
]);

/** An OAuth error response (RFC 6749 §5.2, RFC 8628 §3.5); `error` is its code. */
export class OAuthError extends SbxError {
  constructor(
    readonly error: string,
    message: string,
  ) {
    super(AUTH_ERRORS.has(error) ? 'UNAUTHENTICATED' : 'BAD_REQUEST', message);
  }
}

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** POSTs a grant to the token endpoint: the tokens, or an OAuthError with the issuer's code. */
export async function requestToken(
  tokenEndpoint: string,
  form: Readonly<Record<string, string | undefined>>,
  what: string,
): Promise<TokenResponse> {
  const answer = await issuerRequest(tokenEndpoint, what, form);
  const body = answer.body;
  if (answer.status === 200 && isRecord(body)) return tokenResponseOf(body, what);
  if (isUnavailableStatus(answer.status)) throw unexpectedAnswer(what, answer);
  if (answer.status >= 400 && answer.status < 500 && isRecord(body) && typeof body['error'] === 'string') {
    throw oauthErrorOf(body, what);
  }
  throw unexpectedAnswer(what, answer);
}

/** The error response as an OAuthError; its description is the issuer's, kept to one short line. */
export function oauthErrorOf(body: Record<string, unknown>, what: string): OAuthError {
  const error = String(body['error']);
  const description = body['error_description'];
  const detail = typeof description === 'string' ? `: ${description.split('\n')[0]?.slice(0, 200)}` : '';
  return new OAuthError(error, `${what}: ${error}${detail}`);
}

/** A positive number; issuers that send `"3600"` for 3600 are forgiven. */
export function positiveNumber(value: unknown): number | undefined {
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) && number > 0 ? number : undefined;
}

function tokenResponseOf(body: Record<string, unknown>, what: string): TokenResponse {
  const { access_token: accessToken, token_type: tokenType } = body;
  if (typeof accessToken !== 'string' || accessToken === '') {
    throw new SbxError('BAD_REQUEST', `${what}: the issuer's answer has no access_token`);
  }
  // RFC 6749 §7.1: the broker takes bearer tokens only (the name is case-insensitive).
  if (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer') {
    throw new SbxError('BAD_REQUEST', `${what}: token_type ${String(tokenType)} is not Bearer`);
  }
  const expiresIn = positiveNumber(body['expires_in']);
  const refreshToken = body['refresh_token'];
  const scope = body['scope'];
  return {
    access_token: accessToken,
    ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
    ...(typeof refreshToken === 'string' && refreshToken !== '' ? { refresh_token: refreshToken } : {}),
    ...(typeof scope === 'string' ? { scope } : {}),
  };
}
