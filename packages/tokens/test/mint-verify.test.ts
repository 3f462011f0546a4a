import { describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import {
  createVerifier,
  mintCapabilityToken,
  requireScope,
  TOKEN_ERROR_REASONS,
  TokenError,
  type MintOptions,
} from '../src/index.js';
import { refusalError, refusalOf, fixedClock, ISSUER, MAX_TTL, newTestKey, NOW, SANDBOX_A } from './forge.js';

const { key } = newTestKey();
const clock = fixedClock();
const verifier = createVerifier({
  keys: [key],
  issuer: ISSUER,
  audience: SANDBOX_A,
  maxTtlSeconds: MAX_TTL,
  now: clock.now,
});

function mint(overrides: Partial<MintOptions> = {}) {
  return mintCapabilityToken({
    key,
    issuer: ISSUER,
    subject: 'user_xyz',
    sandboxId: SANDBOX_A,
    scopes: ['fs:rw', 'shell'],
    ttlSeconds: 300,
    threadId: 'thr_456',
    now: clock.now,
    ...overrides,
  });
}

function decodeSegment(token: string, index: number): unknown {
  return JSON.parse(Buffer.from(token.split('.')[index] ?? '', 'base64url').toString('utf8'));
}

describe('mint → verify', () => {
  it('round-trips the claims, normalizing aliases to canonical scopes', () => {
    const minted = mint({ scopes: ['exec', 'fs_write', 'fs:rw'], sessionId: 'ses_1' });
    expect(minted.claims).toEqual({
      iss: ISSUER,
      sub: 'user_xyz',
      aud: SANDBOX_A,
      scope: 'fs:rw process',
      thread_id: 'thr_456',
      session_id: 'ses_1',
      jti: minted.claims.jti,
      iat: NOW,
      nbf: NOW,
      exp: NOW + 300,
    });
    expect(minted.expiresAt.toISOString()).toBe('2026-01-15T12:05:00.000Z');
    const verified = verifier.verify(minted.token);
    expect(verified.claims).toEqual(minted.claims);
    expect(verified.scopes).toEqual(['fs:rw', 'process']);
    expect([...verified.effectiveScopes].toSorted()).toEqual(['fs:ro', 'fs:rw', 'process']);
    expect(verified.expiresAt).toEqual(minted.expiresAt);
  });

  it('writes the explicit header and exactly the claims returned', () => {
    const minted = mint();
    expect(decodeSegment(minted.token, 0)).toEqual({ alg: 'HS256', typ: 'sbx-cap+jwt' });
    expect(decodeSegment(minted.token, 1)).toEqual(minted.claims);
  });

  it('gives each token a fresh random jti', () => {
    const ids = new Set(Array.from({ length: 50 }, () => mint().claims.jti));
    expect(ids.size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^tok_[A-Za-z0-9_-]{22}$/);
  });

  it('refuses unknown scopes, no scopes and a bad ttl at mint with BAD_REQUEST', () => {
    for (const bad of [
      { scopes: ['fs:ro', 'root'] },
      { scopes: [] },
      { ttlSeconds: 0 },
      { ttlSeconds: 1.5 },
      { sandboxId: '' },
    ]) {
      expect(() => mint(bad)).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
    }
  });

  it('stops verifying once the clock passes exp plus the skew', () => {
    const minted = mint({ ttlSeconds: 60 });
    clock.set(NOW + 60 + 29);
    expect(verifier.verify(minted.token).claims.jti).toBe(minted.claims.jti);
    clock.set(NOW + 60 + 30);
    expect(refusalOf(verifier, minted.token)).toBe('expired');
    clock.set(NOW);
  });
});

describe('requireScope', () => {
  it('passes granted and implied scopes (fs:rw → fs:ro, shell → shell:ro)', () => {
    const verified = verifier.verify(mint({ scopes: ['fs:rw', 'shell'] }).token);
    for (const scope of ['fs:rw', 'fs:ro', 'shell', 'shell:ro'] as const) {
      expect(() => requireScope(verified, scope)).not.toThrow();
    }
  });

  it('refuses what is neither granted nor implied, as CAPABILITY_DENIED', () => {
    const verified = verifier.verify(mint({ scopes: ['fs:ro', 'shell:ro'] }).token);
    for (const scope of ['fs:rw', 'shell', 'process'] as const) {
      let caught: unknown;
      try {
        requireScope(verified, scope);
      } catch (err) {
        caught = err;
      }
      expect(caught).toMatchObject({ reason: 'insufficient_scope', code: 'CAPABILITY_DENIED', status: 403 });
    }
  });
});

describe('TokenError', () => {
  it('maps insufficient_scope to CAPABILITY_DENIED and every other reason to UNAUTHENTICATED', () => {
    for (const reason of TOKEN_ERROR_REASONS) {
      const plain = new TokenError(reason, 'refused').toSbxError();
      expect(plain).toBeInstanceOf(SbxError);
      expect(plain.code).toBe(reason === 'insufficient_scope' ? 'CAPABILITY_DENIED' : 'UNAUTHENTICATED');
      expect(plain.status).toBe(reason === 'insufficient_scope' ? 403 : 401);
      expect(plain.toEnvelope().error.details).toEqual({ reason });
    }
  });

  it('is itself an SbxError, so error middleware answers 401 rather than 500', () => {
    const error = refusalError(verifier, 'not.a.token');
    expect(error?.reason).toBe('malformed');
    expect(error).toBeInstanceOf(SbxError);
    expect(SbxError.from(error).code).toBe('UNAUTHENTICATED');
  });
});

describe('key rotation', () => {
  const previous = newTestKey().key;
  const current = newTestKey().key;
  const options = { issuer: ISSUER, audience: SANDBOX_A, maxTtlSeconds: MAX_TTL, now: clock.now };
  const oldToken = mint({ key: previous }).token;
  const newToken = mint({ key: current }).token;

  it('accepts tokens of the previous key while it is listed', () => {
    const rotating = createVerifier({ ...options, keys: [current, previous] });
    expect(rotating.verify(oldToken).claims.sub).toBe('user_xyz');
    expect(rotating.verify(newToken).claims.sub).toBe('user_xyz');
  });

  it('refuses them once the previous key is removed', () => {
    const rotated = createVerifier({ ...options, keys: current });
    expect(refusalOf(rotated, oldToken)).toBe('bad_signature');
    expect(rotated.verify(newToken).claims.sub).toBe('user_xyz');
  });

  it('refuses an empty key list at construction', () => {
    expect(() => createVerifier({ ...options, keys: [] })).toThrow(RangeError);
  });
});
