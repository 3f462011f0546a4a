import { describe, expect, it } from '@jest/globals';
import { createVerifier, mintCapabilityToken } from '../src/index.js';
import {
  refusalError,
  refusalOf,
  fixedClock,
  forge,
  goodClaims,
  ISSUER,
  MAX_TTL,
  newTestKey,
  NOW,
  SANDBOX_A,
  SANDBOX_B,
} from './forge.js';

// Claim attacks on validly signed tokens: only the claim rules stand in the way.
const a = newTestKey();
const clock = fixedClock();
const verifierA = createVerifier({
  keys: a.key,
  issuer: ISSUER,
  audience: SANDBOX_A,
  maxTtlSeconds: MAX_TTL,
  now: clock.now,
});

function signed(overrides: Record<string, unknown>): string {
  return forge({ keyBytes: a.bytes, payload: goodClaims(overrides) });
}

describe('expiry', () => {
  it('refuses a token without exp, or with exp that is not a whole number', () => {
    expect(refusalOf(verifierA, signed({ exp: undefined }))).toBe('malformed');
    for (const exp of [String(NOW + 300), NOW + 300.5, null, true, 1e300, { n: NOW + 300 }]) {
      expect(refusalOf(verifierA, signed({ exp }))).toBe('malformed');
    }
    expect(refusalOf(verifierA, signed({ exp: -1 }))).toBe('expired');
  });

  it('refuses a token expired beyond the 30 s skew', () => {
    expect(refusalOf(verifierA, signed({ iat: NOW - 300, nbf: NOW - 300, exp: NOW - 31 }))).toBe('expired');
    expect(refusalOf(verifierA, signed({ iat: NOW - 300, nbf: NOW - 300, exp: NOW - 30 }))).toBe('expired');
  });

  it('accepts a token expired within the skew', () => {
    const verified = verifierA.verify(signed({ iat: NOW - 300, nbf: NOW - 300, exp: NOW - 29 }));
    expect(verified.expiresAt.getTime()).toBe((NOW - 29) * 1000);
  });

  it('honours a smaller tolerance', () => {
    const strict = createVerifier({
      keys: a.key,
      issuer: ISSUER,
      audience: SANDBOX_A,
      maxTtlSeconds: MAX_TTL,
      clockToleranceSeconds: 0,
      now: clock.now,
    });
    expect(refusalOf(strict, signed({ iat: NOW - 300, nbf: NOW - 300, exp: NOW }))).toBe('expired');
    expect(strict.verify(signed({ iat: NOW - 300, nbf: NOW - 300, exp: NOW + 1 })).claims.exp).toBe(NOW + 1);
  });

  it('refuses a tolerance above 30 s at construction', () => {
    expect(() =>
      createVerifier({
        keys: a.key,
        issuer: ISSUER,
        audience: SANDBOX_A,
        maxTtlSeconds: MAX_TTL,
        clockToleranceSeconds: 31,
      }),
    ).toThrow(RangeError);
  });
});

describe('not before and issued at', () => {
  it('refuses nbf in the future beyond the skew, accepts it within', () => {
    expect(refusalOf(verifierA, signed({ nbf: NOW + 31, exp: NOW + 300 }))).toBe('not_yet_valid');
    expect(verifierA.verify(signed({ nbf: NOW + 30, exp: NOW + 300 })).claims.nbf).toBe(NOW + 30);
  });

  it('refuses iat in the future beyond the skew', () => {
    expect(refusalOf(verifierA, signed({ iat: NOW + 120, nbf: NOW, exp: NOW + 300 }))).toBe('not_yet_valid');
  });

  it('requires iat as a whole number', () => {
    expect(refusalOf(verifierA, signed({ iat: undefined }))).toBe('malformed');
    expect(refusalOf(verifierA, signed({ iat: String(NOW) }))).toBe('malformed');
    expect(refusalOf(verifierA, signed({ iat: undefined, nbf: undefined }))).toBe('malformed');
  });

  it('accepts a token without nbf (RFC 7519 §4.1.5: optional), returning no nbf', () => {
    const verified = verifierA.verify(signed({ nbf: undefined }));
    expect(verified.claims).toEqual(goodClaims({ nbf: undefined }));
    expect('nbf' in verified.claims).toBe(false);
  });

  it('still requires exp when nbf is absent', () => {
    expect(refusalOf(verifierA, signed({ nbf: undefined, exp: undefined }))).toBe('malformed');
  });

  it('refuses a present nbf that is not a whole number of seconds, saying so', () => {
    for (const nbf of [String(NOW), NOW + 0.5, -1, null, true, { n: NOW }]) {
      const error = refusalError(verifierA, signed({ nbf }));
      expect({ nbf, reason: error?.reason, message: error?.message }).toEqual({
        nbf,
        reason: 'malformed',
        message: 'token nbf must be a whole number of seconds',
      });
    }
  });

  it('accepts a past nbf, and a future one within the skew', () => {
    expect(verifierA.verify(signed({ nbf: NOW - 60 })).claims.nbf).toBe(NOW - 60);
    expect(verifierA.verify(signed({ nbf: NOW + 29 })).claims.nbf).toBe(NOW + 29);
  });

  it('refuses a token that ends before it starts', () => {
    expect(refusalOf(verifierA, signed({ iat: NOW, nbf: NOW, exp: NOW }))).toBe('malformed');
  });
});

describe('lifetime', () => {
  it('refuses exp - iat above maxTtlSeconds, accepts exactly the max', () => {
    expect(refusalOf(verifierA, signed({ exp: NOW + MAX_TTL + 1 }))).toBe('ttl_too_long');
    expect(verifierA.verify(signed({ exp: NOW + MAX_TTL })).claims.exp).toBe(NOW + MAX_TTL);
  });

  it('measures the lifetime from iat when there is no nbf', () => {
    expect(refusalOf(verifierA, signed({ nbf: undefined, exp: NOW + MAX_TTL + 1 }))).toBe('ttl_too_long');
    expect(verifierA.verify(signed({ nbf: undefined, exp: NOW + MAX_TTL })).claims.exp).toBe(NOW + MAX_TTL);
  });

  it('measures the lifetime from the earlier of iat and nbf', () => {
    expect(refusalOf(verifierA, signed({ iat: NOW, nbf: NOW - MAX_TTL, exp: NOW + 60 }))).toBe(
      'ttl_too_long',
    );
  });

  it('refuses a year-long token that is otherwise valid', () => {
    expect(refusalOf(verifierA, signed({ exp: NOW + 365 * 86_400 }))).toBe('ttl_too_long');
  });
});

describe('audience and issuer', () => {
  const b = newTestKey();
  const verifierB = createVerifier({
    keys: b.key,
    issuer: ISSUER,
    audience: SANDBOX_B,
    maxTtlSeconds: MAX_TTL,
    now: clock.now,
  });
  const sameKeyB = createVerifier({
    keys: a.key,
    issuer: ISSUER,
    audience: SANDBOX_B,
    maxTtlSeconds: MAX_TTL,
    now: clock.now,
  });
  const mintedForA = mintCapabilityToken({
    key: a.key,
    issuer: ISSUER,
    subject: 'user_xyz',
    sandboxId: SANDBOX_A,
    scopes: ['fs:rw'],
    ttlSeconds: 300,
    now: clock.now,
  }).token;

  it('a token for sandbox A is refused by sandbox B, which has its own key', () => {
    expect(verifierA.verify(mintedForA).claims.aud).toBe(SANDBOX_A);
    expect(refusalOf(verifierB, mintedForA)).toBe('bad_signature');
  });

  it('a token for sandbox A is refused by sandbox B even if both shared a key', () => {
    expect(refusalOf(sameKeyB, mintedForA)).toBe('wrong_audience');
  });

  it('refuses aud as an array, even one naming this sandbox', () => {
    expect(refusalOf(verifierA, signed({ aud: [SANDBOX_B, SANDBOX_A] }))).toBe('wrong_audience');
    expect(refusalOf(verifierA, signed({ aud: [SANDBOX_A] }))).toBe('wrong_audience');
    expect(refusalOf(verifierA, signed({ aud: undefined }))).toBe('wrong_audience');
  });

  it('refuses another or a missing issuer', () => {
    expect(refusalOf(verifierA, signed({ iss: 'someone-else' }))).toBe('wrong_issuer');
    expect(refusalOf(verifierA, signed({ iss: undefined }))).toBe('wrong_issuer');
    expect(refusalOf(verifierA, signed({ iss: [ISSUER] }))).toBe('wrong_issuer');
  });
});

describe('scope claim', () => {
  it('refuses unknown names rather than dropping them', () => {
    const error = refusalError(verifierA, signed({ scope: 'fs:ro admin' }));
    expect(error?.reason).toBe('unknown_scope');
    expect(error?.message).toContain('admin');
    expect(refusalOf(verifierA, signed({ scope: 'fs:ro\tshell' }))).toBe('unknown_scope');
    expect(refusalOf(verifierA, signed({ scope: 'FS:RW' }))).toBe('unknown_scope');
  });

  it('refuses input aliases inside a token: minted tokens carry canonical names', () => {
    expect(refusalOf(verifierA, signed({ scope: 'fs_write' }))).toBe('unknown_scope');
  });

  it('refuses a scope that is not a string or grants nothing', () => {
    expect(refusalOf(verifierA, signed({ scope: ['fs:ro'] }))).toBe('malformed');
    expect(refusalOf(verifierA, signed({ scope: undefined }))).toBe('malformed');
    expect(refusalOf(verifierA, signed({ scope: ' ' }))).toBe('malformed');
  });

  it('accepts extra spaces and returns canonical order', () => {
    expect(verifierA.verify(signed({ scope: ' shell  fs:ro ' })).scopes).toEqual(['fs:ro', 'shell']);
  });
});

describe('identity claims', () => {
  it('requires sub and jti as non-empty strings', () => {
    for (const sub of [undefined, '', 42]) expect(refusalOf(verifierA, signed({ sub }))).toBe('malformed');
    for (const jti of [undefined, '', 42]) expect(refusalOf(verifierA, signed({ jti }))).toBe('malformed');
  });

  it('refuses thread_id or session_id that are not non-empty strings', () => {
    expect(refusalOf(verifierA, signed({ thread_id: 456 }))).toBe('malformed');
    expect(refusalOf(verifierA, signed({ session_id: '' }))).toBe('malformed');
  });

  it('returns only the known claims, frozen', () => {
    const verified = verifierA.verify(signed({ role: 'admin', session_id: 'ses_1' }));
    expect(verified.claims).toEqual(goodClaims({ session_id: 'ses_1' }));
    expect(Object.isFrozen(verified.claims)).toBe(true);
  });
});
