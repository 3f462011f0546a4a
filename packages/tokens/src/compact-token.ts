import { isBase64url } from './base64url.js';
import { isRecord, TOKEN_ALGORITHM, TOKEN_TYPE } from './claims.js';
import { TokenError } from './token-error.js';

/** Far above any real capability token; bounds the work a hostile string can cause. */
export const MAX_TOKEN_LENGTH = 4096;

/** An HMAC-SHA256 signature is 32 bytes: 43 base64url characters. */
const HS256_SIGNATURE_LENGTH = 43;

/** Only these header parameters exist in our tokens; crit, jku, x5u, jwk, kid, b64 … are refused. */
const ALLOWED_HEADER_PARAMETERS: ReadonlySet<string> = new Set(['alg', 'typ']);

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The structural checks done before any signature check, so every refusal
 * names its precise reason. Returns the decoded payload, not yet trusted.
 */
export function parseCompactToken(token: unknown): Record<string, unknown> {
  if (typeof token !== 'string' || token === '') throw new TokenError('missing', 'no token was presented');
  if (token.length > MAX_TOKEN_LENGTH) throw new TokenError('malformed', 'token is too long');
  const [header, payload, signature, ...extra] = token.split('.');
  if (header === undefined || payload === undefined || signature === undefined || extra.length > 0) {
    throw new TokenError('malformed', 'token must have exactly three dot-separated segments');
  }
  checkHeader(decodeJsonSegment(header, 'header'));
  const claims = decodeJsonSegment(payload, 'payload');
  checkSignatureShape(signature);
  return claims;
}

function decodeJsonSegment(segment: string, name: 'header' | 'payload'): Record<string, unknown> {
  if (segment === '' || !isBase64url(segment)) {
    throw new TokenError('malformed', `token ${name} is not base64url`);
  }
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(Buffer.from(segment, 'base64url')));
  } catch {
    throw new TokenError('malformed', `token ${name} is not UTF-8 JSON`);
  }
  if (!isRecord(value)) throw new TokenError('malformed', `token ${name} is not a JSON object`);
  return value;
}

function checkHeader(header: Record<string, unknown>): void {
  if (header['alg'] !== TOKEN_ALGORITHM) {
    throw new TokenError('bad_signature', `token must be signed with ${TOKEN_ALGORITHM}`);
  }
  for (const name of Object.keys(header)) {
    if (!ALLOWED_HEADER_PARAMETERS.has(name)) {
      throw new TokenError('malformed', 'token header carries an unsupported parameter');
    }
  }
  if (header['typ'] !== TOKEN_TYPE) {
    throw new TokenError('wrong_type', `token type must be ${TOKEN_TYPE}`);
  }
}

function checkSignatureShape(signature: string): void {
  if (!isBase64url(signature)) throw new TokenError('malformed', 'token signature is not base64url');
  if (signature === '') throw new TokenError('bad_signature', 'token is not signed');
  if (signature.length !== HS256_SIGNATURE_LENGTH) {
    throw new TokenError('bad_signature', 'token signature has the wrong length');
  }
}
