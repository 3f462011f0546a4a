import { describe, expect, it } from '@jest/globals';
import {
  createVerifier,
  downscope,
  mintCapabilityToken,
  TokenError,
  type DownscopeOptions,
  type MintedToken,
} from '../src/index.js';
import {
  refusalOf,
  fixedClock,
  forge,
  goodClaims,
  ISSUER,
  MAX_TTL,
  newTestKey,
  NOW,
  SANDBOX_A,
} from './forge.js';

const { key, bytes } = newTestKey();
const clock = fixedClock();
const verifier = createVerifier({
  keys: key,
  issuer: ISSUER,
  audience: SANDBOX_A,
  maxTtlSeconds: MAX_TTL,
  now: clock.now,
});

function original(scopes: string[], ttlSeconds = 600): MintedToken {
  return mintCapabilityToken({
    key,
    issuer: ISSUER,
    subject: 'user_xyz',
    sandboxId: SANDBOX_A,
    scopes,
    ttlSeconds,
    threadId: 'thr_456',
    sessionId: 'ses_1',
    now: clock.now,
  });
}

function refusal(options: DownscopeOptions): TokenError | undefined {
  try {
    downscope(options);
  } catch (err) {
    if (err instanceof TokenError) return err;
    throw err;
  }
  return undefined;
}

describe('downscope', () => {
  it('narrows fs:rw + shell to fs:ro for the same sandbox, subject, thread and session', () => {
    const parent = original(['fs:rw', 'shell']);
    const child = downscope({
      verified: verifier.verify(parent.token),
      key,
      scopes: ['fs:ro'],
      ttlSeconds: 60,
      now: clock.now,
    });
    const verified = verifier.verify(child.token);
    expect(verified.scopes).toEqual(['fs:ro']);
    const { scope: _scope, jti, iat: _iat, nbf: _nbf, exp, ...identity } = verified.claims;
    const { scope: _s, jti: parentJti, iat: _i, nbf: _n, exp: _e, ...parentIdentity } = parent.claims;
    expect(identity).toEqual(parentIdentity);
    expect(jti).not.toBe(parentJti);
    expect(exp).toBe(NOW + 60);
  });

  it('allows implied scopes: shell → shell:ro', () => {
    const parent = verifier.verify(original(['shell']).token);
    expect(
      verifier.verify(
        downscope({ verified: parent, key, scopes: ['shell:ro'], ttlSeconds: 60, now: clock.now }).token,
      ).scopes,
    ).toEqual(['shell:ro']);
  });

  it('refuses escalation: an fs:ro token cannot become fs:rw, nor gain shell', () => {
    const parent = verifier.verify(original(['fs:ro']).token);
    for (const scopes of [['fs:rw'], ['fs:ro', 'shell'], ['process'], ['fs_write']]) {
      const error = refusal({ verified: parent, key, scopes, ttlSeconds: 60, now: clock.now });
      expect(error?.reason).toBe('insufficient_scope');
      expect(error?.code).toBe('CAPABILITY_DENIED');
    }
  });

  it('caps a longer ttl at the original expiry', () => {
    const parent = original(['fs:rw'], 120);
    clock.set(NOW + 100);
    const child = downscope({
      token: parent.token,
      verifier,
      key,
      scopes: ['fs:ro'],
      ttlSeconds: 900,
      now: clock.now,
    });
    expect(child.claims.exp).toBe(parent.claims.exp);
    expect(verifier.verify(child.token).expiresAt).toEqual(parent.expiresAt);
    clock.set(NOW);
  });

  it('refuses to extend a token that has already expired (even within the verify skew)', () => {
    const parent = original(['fs:rw'], 60);
    clock.set(NOW + 70);
    const verified = verifier.verify(parent.token);
    expect(refusal({ verified, key, scopes: ['fs:ro'], ttlSeconds: 60, now: clock.now })?.reason).toBe(
      'expired',
    );
    clock.set(NOW);
  });

  it('verifies a token string before trusting it', () => {
    const forged = forge({ keyBytes: newTestKey().bytes, payload: goodClaims({ scope: 'fs:rw shell' }) });
    expect(
      refusal({ token: forged, verifier, key, scopes: ['fs:rw'], ttlSeconds: 60, now: clock.now })?.reason,
    ).toBe('bad_signature');
    const genuine = forge({ keyBytes: bytes, payload: goodClaims({ scope: 'fs:rw shell' }) });
    expect(
      downscope({ token: genuine, verifier, key, scopes: ['fs:rw'], ttlSeconds: 60, now: clock.now }).claims
        .scope,
    ).toBe('fs:rw');
  });

  it('refuses unknown scope names as a bad request', () => {
    const parent = verifier.verify(original(['fs:rw']).token);
    expect(() =>
      downscope({ verified: parent, key, scopes: ['fs:admin'], ttlSeconds: 60, now: clock.now }),
    ).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
  });

  it('a downscoped token signed with another sandbox key does not verify here', () => {
    const parent = verifier.verify(original(['fs:rw']).token);
    const child = downscope({
      verified: parent,
      key: newTestKey().key,
      scopes: ['fs:ro'],
      ttlSeconds: 60,
      now: clock.now,
    });
    expect(refusalOf(verifier, child.token)).toBe('bad_signature');
  });
});
