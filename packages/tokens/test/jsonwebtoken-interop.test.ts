import { describe, expect, it } from '@jest/globals';
import jwt from 'jsonwebtoken';
import {
  createVerifier,
  downscope,
  mintCapabilityToken,
  TokenError,
  type MintOptions,
} from '../src/index.js';
import {
  b64json,
  fixedClock,
  forge,
  GOOD_HEADER,
  goodClaims,
  ISSUER,
  MAX_TTL,
  newTestKey,
  NOW,
  refusalOf,
  SANDBOX_A,
  SANDBOX_B,
} from './forge.js';

// jsonwebtoken no longer runs when we verify (docs/architecture.md D12); it stays here as the
// reference implementation: what we mint, it accepts; what it signs our way, we accept; and
// where it accepts or refuses a tampered token, so do we.
const a = newTestKey();
const clock = fixedClock();
const verifier = createVerifier({
  keys: a.key,
  issuer: ISSUER,
  audience: SANDBOX_A,
  maxTtlSeconds: MAX_TTL,
  now: clock.now,
});

/** jsonwebtoken pinned the way our verifier pins itself. */
const REFERENCE: jwt.VerifyOptions = {
  algorithms: ['HS256'],
  issuer: ISSUER,
  audience: SANDBOX_A,
  clockTolerance: 30,
  clockTimestamp: NOW,
};

function referenceVerify(token: string, options: jwt.VerifyOptions = REFERENCE): unknown {
  return jwt.verify(token, a.key.keyObject, options);
}

function referenceAccepts(token: string): boolean {
  try {
    referenceVerify(token);
    return true;
  } catch {
    return false;
  }
}

function mint(overrides: Partial<MintOptions> = {}) {
  return mintCapabilityToken({
    key: a.key,
    issuer: ISSUER,
    subject: 'user_xyz',
    sandboxId: SANDBOX_A,
    scopes: ['fs:ro'],
    ttlSeconds: 300,
    now: clock.now,
    ...overrides,
  });
}

/** What jsonwebtoken.sign produces with our header and claims. */
function referenceSign(claims: object, options: jwt.SignOptions = {}): string {
  return jwt.sign(claims, a.key.keyObject, {
    algorithm: 'HS256',
    header: { alg: 'HS256', typ: 'sbx-cap+jwt' },
    ...options,
  });
}

/** Our verdict, without the leak checks of refusalOf (run here thousands of times). */
function reasonOf(token: string): string {
  try {
    verifier.verify(token);
    return 'accepted';
  } catch (err) {
    return err instanceof TokenError ? err.reason : String(err);
  }
}

describe('what we mint, jsonwebtoken accepts with the same claims', () => {
  const minted = [
    mint(),
    mint({ scopes: ['fs:rw', 'shell', 'process'], threadId: 'thr_1', sessionId: 'ses_1' }),
    mint({ scopes: ['fs_write', 'exec'], ttlSeconds: MAX_TTL, jti: 'tok_fixed' }),
    mint({ subject: 'agent "ü" ✓', threadId: 'thr_ü', ttlSeconds: 1 }),
  ];
  const narrowed = downscope({
    verified: verifier.verify(minted[1]?.token),
    key: a.key,
    scopes: ['fs:ro'],
    ttlSeconds: 60,
    now: clock.now,
  });

  it.each([...minted, narrowed].map((token, i) => [i, token] as const))(
    'token %i verifies under jsonwebtoken and under ours, to the minted claims',
    (_i, { token, claims }) => {
      expect(referenceVerify(token)).toEqual(claims);
      expect(verifier.verify(token).claims).toEqual(claims);
      const decoded = jwt.decode(token, { complete: true });
      expect(decoded?.header).toEqual({ alg: 'HS256', typ: 'sbx-cap+jwt' });
    },
  );
});

describe('what jsonwebtoken signs our way, we accept', () => {
  it('accepts an HS256 token jsonwebtoken signed with our typ and claim set', () => {
    const claims = goodClaims({ scope: 'fs:rw shell', session_id: 'ses_1' });
    const token = referenceSign(claims);
    const verified = verifier.verify(token);
    expect(verified.claims).toEqual(claims);
    expect(verified.scopes).toEqual(['fs:rw', 'shell']);
    expect(verified.expiresAt.getTime()).toBe((NOW + 300) * 1000);
  });

  it('accepts it under a rotation list where the signing key is the previous one', () => {
    const rotated = createVerifier({
      keys: [newTestKey().key, a.key],
      issuer: ISSUER,
      audience: SANDBOX_A,
      maxTtlSeconds: MAX_TTL,
      now: clock.now,
    });
    expect(rotated.verify(referenceSign(goodClaims())).claims.sub).toBe('user_xyz');
  });

  it('still applies our own claim rules to it', () => {
    expect(refusalOf(verifier, referenceSign(goodClaims({ scope: 'admin' })))).toBe('unknown_scope');
    expect(refusalOf(verifier, referenceSign(goodClaims({ exp: NOW + MAX_TTL + 1 })))).toBe('ttl_too_long');
    expect(refusalOf(verifier, referenceSign(goodClaims({ aud: SANDBOX_B })))).toBe('wrong_audience');
  });
});

describe('the minimal claim set, minted by jsonwebtoken', () => {
  /**
   * Minted the way another broker using jsonwebtoken would mint the minimal claim set
   * (docs/protocol.md#claims): jsonwebtoken writes sub, aud, jti, iss and exp
   * from its options (exp from iat, given so it follows our test clock, not Date.now), and no nbf
   * unless asked. iss is configured because the verifier pins it (docs/architecture.md D3).
   */
  const SEED_SIGN_OPTIONS: jwt.SignOptions = {
    subject: 'user_xyz',
    audience: SANDBOX_A,
    issuer: ISSUER,
    jwtid: 'tok_seed',
  };

  function seedPayload(iat = NOW): object {
    return { scope: 'fs:rw shell', thread_id: 'thr_456', iat };
  }

  function seedMint(options: jwt.SignOptions = {}, iat = NOW): string {
    return referenceSign(seedPayload(iat), { ...SEED_SIGN_OPTIONS, expiresIn: 300, ...options });
  }

  const SEED_CLAIMS = {
    iss: ISSUER,
    sub: 'user_xyz',
    aud: SANDBOX_A,
    scope: 'fs:rw shell',
    thread_id: 'thr_456',
    jti: 'tok_seed',
    iat: NOW,
    exp: NOW + 300,
  };

  it('verifies a token with sub, aud, scope, thread_id, exp, iat, jti and no nbf', () => {
    const token = seedMint();
    expect(jwt.decode(token, { complete: true })).toMatchObject({
      header: { alg: 'HS256', typ: 'sbx-cap+jwt' },
      payload: SEED_CLAIMS,
    });
    expect(referenceVerify(token)).toEqual(SEED_CLAIMS);
    const verified = verifier.verify(token);
    expect(verified.claims).toEqual(SEED_CLAIMS);
    expect(verified.scopes).toEqual(['fs:rw', 'shell']);
    expect(verified.expiresAt.getTime()).toBe((NOW + 300) * 1000);
  });

  it('refuses it with a future nbf beyond the skew, as jsonwebtoken does', () => {
    const token = seedMint({ notBefore: 31 });
    expect(jwt.decode(token)).toMatchObject({ nbf: NOW + 31 });
    expect(() => referenceVerify(token)).toThrow('jwt not active');
    expect(refusalOf(verifier, token)).toBe('not_yet_valid');
  });

  it('accepts it with a past nbf or a future one within the skew, as jsonwebtoken does', () => {
    for (const notBefore of [-60, 0, 30]) {
      const token = seedMint({ notBefore });
      expect(referenceVerify(token)).toEqual({ ...SEED_CLAIMS, nbf: NOW + notBefore });
      expect(verifier.verify(token).claims).toEqual({ ...SEED_CLAIMS, nbf: NOW + notBefore });
    }
  });

  it('still refuses it without exp, with a lifetime above the maximum, or expired', () => {
    const unbounded = referenceSign(seedPayload(), SEED_SIGN_OPTIONS);
    expect(jwt.decode(unbounded)).not.toHaveProperty('exp');
    expect(refusalOf(verifier, unbounded)).toBe('malformed');
    expect(refusalOf(verifier, seedMint({ expiresIn: MAX_TTL + 1 }))).toBe('ttl_too_long');
    expect(refusalOf(verifier, seedMint({}, NOW - 400))).toBe('expired');
  });
});

describe('what jsonwebtoken signs otherwise, we refuse', () => {
  it('refuses HS384 and HS512 with our typ, validly signed with the same key', () => {
    for (const algorithm of ['HS384', 'HS512'] as const) {
      const token = referenceSign(goodClaims(), {
        algorithm,
        header: { alg: algorithm, typ: 'sbx-cap+jwt' },
      });
      // Unpinned, jsonwebtoken takes the header's word for it; the pin is what refuses it.
      expect(() => referenceVerify(token, { ...REFERENCE, algorithms: undefined })).not.toThrow();
      expect(refusalOf(verifier, token)).toBe('bad_signature');
    }
  });

  it('refuses its default typ JWT, and no typ at all', () => {
    const plain = jwt.sign(goodClaims(), a.key.keyObject, { algorithm: 'HS256' });
    expect(jwt.decode(plain, { complete: true })?.header.typ).toBe('JWT');
    expect(() => referenceVerify(plain)).not.toThrow();
    expect(refusalOf(verifier, plain)).toBe('wrong_type');
    const untyped = referenceSign(goodClaims(), { header: { alg: 'HS256', typ: undefined } });
    expect(jwt.decode(untyped, { complete: true })?.header).toEqual({ alg: 'HS256' });
    expect(refusalOf(verifier, untyped)).toBe('wrong_type');
  });

  it('refuses a header with a kid', () => {
    expect(refusalOf(verifier, referenceSign(goodClaims(), { keyid: 'k1' }))).toBe('malformed');
  });
});

describe('tampering: we refuse whatever jsonwebtoken refuses', () => {
  const { token } = mint();
  const dot = token.lastIndexOf('.');
  const signed = token.slice(0, dot);
  const signature = token.slice(dot + 1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

  it('agrees on every one-character change of the signature: all refused', () => {
    const disagreements: string[] = [];
    for (let at = 0; at < signature.length; at += 1) {
      for (const c of alphabet) {
        if (c === signature[at]) continue;
        const variant = `${signed}.${signature.slice(0, at)}${c}${signature.slice(at + 1)}`;
        const ours = reasonOf(variant);
        if (referenceAccepts(variant) || ours !== 'bad_signature') disagreements.push(`${at}:${c}:${ours}`);
      }
    }
    expect(disagreements).toEqual([]);
  });

  it('refuses the other spellings of the same signature bytes, as a text comparison does', () => {
    // The 43rd character carries two bits beyond the 256 signed: three others decode to the same bytes.
    const last = alphabet.indexOf(signature.slice(-1));
    const spellings = [1, 2, 3].map(
      (spare) => `${signed}.${signature.slice(0, -1)}${alphabet[last + spare]}`,
    );
    for (const variant of spellings) {
      expect(Buffer.from(variant.slice(dot + 1), 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
      expect(referenceAccepts(variant)).toBe(false);
      expect(refusalOf(verifier, variant)).toBe('bad_signature');
    }
  });

  it('refuses a payload changed under the original signature, as jsonwebtoken does', () => {
    const [head = ''] = token.split('.');
    const escalated = `${head}.${b64json(goodClaims({ scope: 'fs:rw shell' }))}.${signature}`;
    expect(referenceAccepts(escalated)).toBe(false);
    expect(refusalOf(verifier, escalated)).toBe('bad_signature');
  });

  it('gives the reason of jsonwebtoken’s first objection when several claims are wrong', () => {
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string, string]> = [
      [{ nbf: NOW + 60, exp: NOW - 60, aud: SANDBOX_B }, 'jwt not active', 'not_yet_valid'],
      [{ iat: NOW - 600, nbf: NOW - 600, exp: NOW - 60, aud: SANDBOX_B }, 'jwt expired', 'expired'],
      [{ exp: -1, iss: 'someone-else' }, 'jwt expired', 'expired'],
      [{ nbf: 'soon', aud: SANDBOX_B }, 'invalid nbf value', 'malformed'],
      [{ aud: SANDBOX_B, iss: 'someone-else' }, 'jwt audience invalid. expected: sbx_A', 'wrong_audience'],
      [{ aud: [SANDBOX_A], iss: 'someone-else' }, 'jwt issuer invalid. expected: sbx-broker', 'wrong_issuer'],
    ];
    for (const [overrides, referenceMessage, reason] of cases) {
      const forged = forge({ keyBytes: a.bytes, header: GOOD_HEADER, payload: goodClaims(overrides) });
      expect(() => referenceVerify(forged)).toThrow(referenceMessage);
      expect({ overrides, reason: refusalOf(verifier, forged) }).toEqual({ overrides, reason });
    }
  });
});
