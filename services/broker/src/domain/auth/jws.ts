// Compact JWS for OIDC access tokens: structure and signature, on node:crypto.
// (jsonwebtoken is not a dependency of the broker; the two algorithms we accept
// are one crypto.verify call each, and pinning them here is simpler than
// configuring a general library not to accept the others.)
import { verify, type KeyObject } from 'node:crypto';
import { SbxError } from '@sbx/protocol';
import { decodeBase64url } from '@sbx/tokens';

/** Asymmetric only: HS256 with the public key as secret (alg confusion) and `none` never get a key. */
export const OIDC_ALGORITHMS = ['RS256', 'ES256'] as const;
export type OidcAlgorithm = (typeof OIDC_ALGORITHMS)[number];

/** Real access tokens are a few kilobytes at most; this bounds hostile input. */
const MAX_TOKEN_LENGTH = 16_384;
const MAX_KID_LENGTH = 256;
/** RFC 9068 access tokens say at+jwt; many providers say JWT or nothing. */
const ACCEPTED_TYPES: ReadonlySet<unknown> = new Set([undefined, 'JWT', 'at+jwt', 'application/at+jwt']);
const ES256_SIGNATURE_BYTES = 64;
const MIN_RSA_BITS = 2048;

export interface ParsedJws {
  readonly alg: OidcAlgorithm;
  readonly kid: string;
  readonly payload: Record<string, unknown>;
  readonly signingInput: string;
  readonly signature: Buffer;
}

export function invalidToken(reason: string): SbxError {
  return new SbxError('UNAUTHENTICATED', `access token is not valid: ${reason}`);
}

function isOidcAlgorithm(value: unknown): value is OidcAlgorithm {
  return OIDC_ALGORITHMS.some((alg) => alg === value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function decodeJsonSegment(segment: string, name: string): Record<string, unknown> {
  const bytes = segment === '' ? undefined : decodeBase64url(segment);
  if (bytes === undefined) throw invalidToken(`${name} is not base64url`);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw invalidToken(`${name} is not UTF-8 JSON`);
  }
  if (!isRecord(value)) throw invalidToken(`${name} is not a JSON object`);
  return value;
}

/** Structure and header checks, before any key is looked up. The payload is not yet trusted. */
export function parseJws(token: string): ParsedJws {
  if (token.length > MAX_TOKEN_LENGTH) throw invalidToken('too long');
  const [header, payload, signature, ...extra] = token.split('.');
  if (header === undefined || payload === undefined || signature === undefined || extra.length > 0) {
    throw invalidToken('not a compact JWS');
  }
  const head = decodeJsonSegment(header, 'header');
  if (!isOidcAlgorithm(head['alg'])) throw invalidToken(`alg must be one of ${OIDC_ALGORITHMS.join(', ')}`);
  // We implement no JWS extensions, so a token that demands one cannot be understood.
  if (head['crit'] !== undefined) throw invalidToken('crit header is not supported');
  if (!ACCEPTED_TYPES.has(head['typ'])) throw invalidToken('typ is not an access token type');
  const kid = head['kid'];
  if (typeof kid !== 'string' || kid === '' || kid.length > MAX_KID_LENGTH)
    throw invalidToken('kid is missing');
  const signatureBytes = signature === '' ? undefined : decodeBase64url(signature);
  if (signatureBytes === undefined) throw invalidToken('signature is missing');
  return {
    alg: head['alg'],
    kid,
    payload: decodeJsonSegment(payload, 'payload'),
    signingInput: `${header}.${payload}`,
    signature: signatureBytes,
  };
}

/** The key must be of the algorithm's type and strength, or the signature is not checked at all. */
const KEY_FITS: Readonly<Record<OidcAlgorithm, (key: KeyObject) => boolean>> = {
  RS256: (key) =>
    key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= MIN_RSA_BITS,
  ES256: (key) => key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1',
};

export function signatureVerifies(jws: ParsedJws, key: KeyObject): boolean {
  if (key.type !== 'public' || !KEY_FITS[jws.alg](key)) return false;
  const input = Buffer.from(jws.signingInput, 'ascii');
  if (jws.alg === 'RS256') return verify('sha256', input, key, jws.signature);
  if (jws.signature.length !== ES256_SIGNATURE_BYTES) return false;
  return verify('sha256', input, { key, dsaEncoding: 'ieee-p1363' }, jws.signature);
}
