import { inspect } from 'node:util';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import {
  createVerifier,
  generateSigningKey,
  mintCapabilityToken,
  SigningKey,
  signingKeyFromBase64url,
  signingKeyFromBytes,
  TokenError,
} from '../src/index.js';

function reasonOf(build: () => unknown): string | undefined {
  try {
    build();
  } catch (err) {
    return err instanceof TokenError ? err.reason : `not a TokenError: ${String(err)}`;
  }
  return undefined;
}

describe('signing keys', () => {
  it('refuses an empty or 31-byte key with key_too_short, accepts 32', () => {
    expect(reasonOf(() => signingKeyFromBytes(Buffer.alloc(0)))).toBe('key_too_short');
    expect(reasonOf(() => signingKeyFromBytes(randomBytes(31)))).toBe('key_too_short');
    expect(reasonOf(() => signingKeyFromBase64url(''))).toBe('key_too_short');
    expect(reasonOf(() => signingKeyFromBase64url(randomBytes(31).toString('base64url')))).toBe(
      'key_too_short',
    );
    expect(reasonOf(() => signingKeyFromBytes(randomBytes(32)))).toBeUndefined();
  });

  it('refuses key text that is not base64url (standard base64, padding, junk)', () => {
    const bytes = Buffer.from('fb'.repeat(32), 'hex');
    expect(reasonOf(() => signingKeyFromBase64url(bytes.toString('base64')))).toBe('malformed');
    expect(reasonOf(() => signingKeyFromBase64url(`${bytes.toString('base64url')}=`))).toBe('malformed');
    expect(reasonOf(() => signingKeyFromBase64url('not a key at all, just words!'))).toBe('malformed');
  });

  it('generates 32 random bytes, different every time', () => {
    const a = generateSigningKey().toBase64url();
    const b = generateSigningKey().toBase64url();
    expect(Buffer.from(a, 'base64url')).toHaveLength(32);
    expect(a).not.toBe(b);
  });

  it('a key passed on as base64url verifies what the original signed', () => {
    const original = SigningKey.generate();
    const received = signingKeyFromBase64url(`${original.toBase64url()}\n`);
    const { token } = mintCapabilityToken({
      key: original,
      issuer: 'b',
      subject: 'u',
      sandboxId: 's',
      scopes: ['fs:ro'],
      ttlSeconds: 60,
    });
    const verifier = createVerifier({ keys: received, issuer: 'b', audience: 's', maxTtlSeconds: 60 });
    expect(verifier.verify(token).scopes).toEqual(['fs:ro']);
  });

  it('never shows key material in JSON or inspect output', () => {
    const key = generateSigningKey();
    const text = key.toBase64url();
    expect(JSON.stringify({ key })).not.toContain(text);
    expect(inspect(key)).not.toContain(text);
    expect(inspect({ nested: { key } }, { depth: 5 })).not.toContain(text);
  });
});
