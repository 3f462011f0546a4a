import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { inspect } from 'node:util';
import { decodeBase64url, encodeBase64url } from './base64url.js';
import { TokenError } from './token-error.js';

/** HS256 keys shorter than the hash output weaken it (RFC 7518 §3.2). */
export const MIN_SIGNING_KEY_BYTES = 32;

/**
 * A per-sandbox HMAC key, held once as a KeyObject, so minting and verifying
 * never import key material per call.
 */
export class SigningKey {
  readonly #key: KeyObject;

  private constructor(key: KeyObject) {
    this.#key = key;
  }

  /** Refuses fewer than 32 bytes, so a service given an empty or short key fails at start. */
  static fromBytes(bytes: Uint8Array): SigningKey {
    if (bytes.byteLength < MIN_SIGNING_KEY_BYTES) {
      throw new TokenError(
        'key_too_short',
        `signing key has ${bytes.byteLength} bytes; at least ${MIN_SIGNING_KEY_BYTES} are required`,
      );
    }
    return new SigningKey(createSecretKey(Buffer.from(bytes)));
  }

  static fromBase64url(text: string): SigningKey {
    const bytes = decodeBase64url(text.trim());
    if (bytes === undefined) {
      throw new TokenError('malformed', 'signing key must be base64url text without padding');
    }
    return SigningKey.fromBytes(bytes);
  }

  static generate(): SigningKey {
    return SigningKey.fromBytes(randomBytes(MIN_SIGNING_KEY_BYTES));
  }

  get keyObject(): KeyObject {
    return this.#key;
  }

  /** The key as base64url, to hand to a sandbox (env var or secrets mount). */
  toBase64url(): string {
    return encodeBase64url(this.#key.export());
  }

  /** Keeps key material out of logs and JSON bodies. */
  toJSON(): string {
    return '[SigningKey]';
  }

  [inspect.custom](): string {
    return 'SigningKey [redacted]';
  }
}

export function generateSigningKey(): SigningKey {
  return SigningKey.generate();
}

export function signingKeyFromBase64url(text: string): SigningKey {
  return SigningKey.fromBase64url(text);
}

export function signingKeyFromBytes(bytes: Uint8Array): SigningKey {
  return SigningKey.fromBytes(bytes);
}

/** A single key or a rotation list (current first), checked once at construction. */
export function keyList(keys: SigningKey | readonly SigningKey[]): readonly SigningKey[] {
  const list = keys instanceof SigningKey ? [keys] : [...keys];
  if (list.length === 0) throw new RangeError('at least one signing key is required');
  for (const key of list) {
    if (!(key instanceof SigningKey)) throw new TypeError('keys must be SigningKey instances');
  }
  return Object.freeze(list);
}
