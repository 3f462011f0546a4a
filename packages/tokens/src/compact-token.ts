import { isBase64url } from './base64url.js';
import { isRecord, TOKEN_ALGORITHM, TOKEN_TYPE } from './claims.js';
import { TokenError } from './token-error.js';

/** Far above any real capability token; bounds the work a hostile string can cause. */
export const MAX_TOKEN_LENGTH = 4096;

/** The header every minted token carries, encoded once. */
export const ENCODED_TOKEN_HEADER = Buffer.from(
  JSON.stringify({ alg: TOKEN_ALGORITHM, typ: TOKEN_TYPE }),
).toString('base64url');

/** An HMAC-SHA256 signature is 32 bytes: 43 base64url characters. */
const HS256_SIGNATURE_LENGTH = 43;

/**
 * The 43rd character carries 2 bits beyond the 256 signed ones; only a character whose
 * low bits are zero is the canonical encoding. Another would decode to the same bytes
 * (a second valid spelling of one signature), so it is refused, as a text comparison would.
 */
const CANONICAL_LAST_SIGNATURE_CHARACTERS = 'AEIMQUYcgkosw048';

/** Only these header parameters exist in our tokens; crit, jku, x5u, jwk, kid, b64 … are refused. */
const ALLOWED_HEADER_PARAMETERS: ReadonlySet<string> = new Set(['alg', 'typ']);

/** A leading byte-order mark is kept, so JSON.parse refuses it (RFC 8259 §8.1: never sent). */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A token that passed the structural checks, each segment decoded once. Nothing in it is trusted yet. */
export interface CompactToken {
  /** `header.payload`, the text the signature covers. */
  readonly signingInput: string;
  readonly payload: Record<string, unknown>;
  /** The decoded signature: 32 bytes. */
  readonly signature: Buffer;
}

/**
 * The structural checks done before any signature check, so every refusal
 * names its precise reason. Returns the decoded payload, not yet trusted.
 */
export function parseCompactToken(token: unknown): Record<string, unknown> {
  return decodeCompactToken(token).payload;
}

/** The same checks as parseCompactToken; also returns what a signature check needs. */
export function decodeCompactToken(token: unknown): CompactToken {
  if (typeof token !== 'string' || token === '') throw new TokenError('missing', 'no token was presented');
  if (token.length > MAX_TOKEN_LENGTH) throw new TokenError('malformed', 'token is too long');
  const headerEnd = token.indexOf('.');
  const payloadEnd = headerEnd < 0 ? -1 : token.indexOf('.', headerEnd + 1);
  if (payloadEnd < 0 || token.includes('.', payloadEnd + 1)) {
    throw new TokenError('malformed', 'token must have exactly three dot-separated segments');
  }
  const header = token.slice(0, headerEnd);
  // Our own header, byte for byte, passes every header check: no need to decode it.
  if (header !== ENCODED_TOKEN_HEADER) checkHeader(decodeJsonSegment(header, 'header'));
  const payload = decodeJsonSegment(token.slice(headerEnd + 1, payloadEnd), 'payload');
  const signature = token.slice(payloadEnd + 1);
  checkSignatureShape(signature);
  return {
    signingInput: token.slice(0, payloadEnd),
    payload,
    signature: Buffer.from(signature, 'base64url'),
  };
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
  if (!CANONICAL_LAST_SIGNATURE_CHARACTERS.includes(signature.charAt(HS256_SIGNATURE_LENGTH - 1))) {
    throw new TokenError('bad_signature', 'token signature is not canonically encoded');
  }
}
