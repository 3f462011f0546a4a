import { describe, expect, it } from '@jest/globals';
import {
  fileUrlSigningInput,
  mintCapabilityToken,
  signFileUrl,
  TokenError,
  verifyFileUrl,
  type FileUrlOperation,
  type TokenErrorReason,
  type VerifyFileUrlOptions,
} from '../src/index.js';
import { fixedClock, hmac, newTestKey, NOW, SANDBOX_A, SANDBOX_B } from './forge.js';

const { key, bytes } = newTestKey();
const clock = fixedClock();
const signed = signFileUrl({
  key,
  sandboxId: SANDBOX_A,
  op: 'GET',
  path: 'src/app.ts',
  ttlSeconds: 300,
  now: clock.now,
});
const base: VerifyFileUrlOptions = {
  keys: key,
  sandboxId: SANDBOX_A,
  op: 'GET',
  path: 'src/app.ts',
  sig: signed.sig,
  exp: signed.exp,
  now: clock.now,
};

function reasonOf(options: Partial<VerifyFileUrlOptions>): TokenErrorReason | 'accepted' {
  try {
    verifyFileUrl({ ...base, ...options });
    return 'accepted';
  } catch (err) {
    if (err instanceof TokenError) return err.reason;
    throw err;
  }
}

describe('signed file URLs', () => {
  it('round-trips and returns the normalized path to serve', () => {
    expect(signed.exp).toBe(String(NOW + 300));
    expect(signed.sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(verifyFileUrl(base)).toEqual({
      sandboxId: SANDBOX_A,
      op: 'GET',
      path: '/src/app.ts',
      expiresAt: new Date((NOW + 300) * 1000),
    });
  });

  it('binds the normalized path, so spellings of the same file share a signature', () => {
    for (const path of ['/src/app.ts', 'src//app.ts', './src/./app.ts', 'src/app.ts/']) {
      expect(reasonOf({ path })).toBe('accepted');
    }
  });

  it('refuses another path, operation, sandbox or exp', () => {
    expect(reasonOf({ path: 'src/app.tsx' })).toBe('bad_signature');
    expect(reasonOf({ path: 'src/../.env' })).toBe('bad_signature');
    expect(reasonOf({ op: 'PUT' })).toBe('bad_signature');
    expect(reasonOf({ sandboxId: SANDBOX_B })).toBe('bad_signature');
    expect(reasonOf({ exp: String(NOW + 301) })).toBe('bad_signature');
    expect(reasonOf({ exp: String(NOW + 299) })).toBe('bad_signature');
  });

  it('refuses a tampered or foreign signature', () => {
    const flipped = (signed.sig[0] === 'A' ? 'B' : 'A') + signed.sig.slice(1);
    expect(reasonOf({ sig: flipped })).toBe('bad_signature');
    expect(reasonOf({ keys: newTestKey().key })).toBe('bad_signature');
  });

  it('refuses an expired URL beyond the skew and one that lives too long', () => {
    clock.set(NOW + 300 + 29);
    expect(reasonOf({})).toBe('accepted');
    clock.set(NOW + 300 + 30);
    expect(reasonOf({})).toBe('expired');
    clock.set(NOW);
    const long = signFileUrl({
      key,
      sandboxId: SANDBOX_A,
      op: 'GET',
      path: 'src/app.ts',
      ttlSeconds: 3600,
      now: clock.now,
    });
    expect(reasonOf({ sig: long.sig, exp: long.exp })).toBe('ttl_too_long');
    expect(reasonOf({ sig: long.sig, exp: long.exp, maxTtlSeconds: 3600 })).toBe('accepted');
  });

  it('reports missing and malformed query values', () => {
    expect(reasonOf({ sig: undefined })).toBe('missing');
    expect(reasonOf({ exp: '' })).toBe('missing');
    for (const sig of [signed.sig.slice(1), `${signed.sig}A`, `+${signed.sig.slice(1)}`, ['x']]) {
      expect(reasonOf({ sig })).toBe('malformed');
    }
    for (const exp of ['1e9', '-1', `${NOW + 300}.0`, ' 1768478700', 'soon']) {
      expect(reasonOf({ exp })).toBe('malformed');
    }
    expect(reasonOf({ path: 'src/app.ts\nGET' })).toBe('malformed');
    expect(reasonOf({ sandboxId: `${SANDBOX_A}\nGET` })).toBe('malformed');
    expect(reasonOf({ op: 'DELETE' as FileUrlOperation })).toBe('malformed');
  });

  it('verifies under a previous key during rotation', () => {
    expect(reasonOf({ keys: [newTestKey().key, key] })).toBe('accepted');
  });

  it('signs a domain-separated string that no JWT signing input can equal', () => {
    const input = fileUrlSigningInput({ sandboxId: SANDBOX_A, op: 'GET', path: 'src/app.ts' }, NOW + 300);
    expect(input).toBe(`sbx-file-url:v1\n${SANDBOX_A}\nGET\n/src/app.ts\n${NOW + 300}`);
    expect(signed.sig).toBe(hmac('sha256', bytes, input));
    expect(signed.sig).not.toBe(hmac('sha256', bytes, input.slice('sbx-file-url:v1\n'.length)));
  });

  it('a JWT signature made with the same key is never a valid URL signature', () => {
    const { token } = mintCapabilityToken({
      key,
      issuer: 'b',
      subject: 'u',
      sandboxId: SANDBOX_A,
      scopes: ['fs:rw'],
      ttlSeconds: 300,
      now: clock.now,
    });
    expect(reasonOf({ sig: token.split('.')[2] })).toBe('bad_signature');
  });
});
