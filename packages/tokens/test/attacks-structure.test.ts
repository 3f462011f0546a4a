import { describe, expect, it } from '@jest/globals';
import jwt from 'jsonwebtoken';
import { createVerifier, mintCapabilityToken, MAX_TOKEN_LENGTH } from '../src/index.js';
import {
  b64json,
  refusalOf,
  fixedClock,
  forge,
  GOOD_HEADER,
  goodClaims,
  hmac,
  ISSUER,
  MAX_TTL,
  newTestKey,
  SANDBOX_A,
} from './forge.js';

// RFC 8725 attacks on the token's shape, header and signature. Every forged
// token below is otherwise valid: the positive control proves it.
const { bytes, key } = newTestKey();
const clock = fixedClock();
const verifier = createVerifier({
  keys: key,
  issuer: ISSUER,
  audience: SANDBOX_A,
  maxTtlSeconds: MAX_TTL,
  now: clock.now,
});

function signedWith(header: unknown, payload: unknown = goodClaims()): string {
  return forge({ keyBytes: bytes, header, payload });
}

function segments(token: string): [string, string, string] {
  const [h = '', p = '', s = ''] = token.split('.');
  return [h, p, s];
}

describe('positive control', () => {
  it('a hand-built token with the right header, claims and key verifies', () => {
    expect(verifier.verify(signedWith(GOOD_HEADER)).scopes).toEqual(['fs:ro']);
  });

  it('a header spelled otherwise (typ first) is decoded and checked, and verifies', () => {
    expect(verifier.verify(signedWith({ typ: 'sbx-cap+jwt', alg: 'HS256' })).scopes).toEqual(['fs:ro']);
  });
});

describe('algorithm attacks', () => {
  it('refuses alg none without a signature', () => {
    const token = `${b64json({ alg: 'none', typ: 'sbx-cap+jwt' })}.${b64json(goodClaims())}.`;
    expect(refusalOf(verifier, token)).toBe('bad_signature');
  });

  it('refuses alg none (any case) carrying a real HS256 signature', () => {
    for (const alg of ['none', 'None', 'NONE']) {
      expect(refusalOf(verifier, signedWith({ alg, typ: 'sbx-cap+jwt' }))).toBe('bad_signature');
    }
  });

  it('refuses alg HS512 even when validly signed with the same key', () => {
    const token = forge({ keyBytes: bytes, header: { alg: 'HS512', typ: 'sbx-cap+jwt' }, hash: 'sha512' });
    // jsonwebtoken left to choose from the header accepts it: the pin is what stops it.
    expect(() => jwt.verify(token, key.keyObject, { clockTimestamp: clock.now() / 1000 })).not.toThrow();
    expect(refusalOf(verifier, token)).toBe('bad_signature');
  });

  it('refuses HS384 and a missing alg', () => {
    expect(
      refusalOf(
        verifier,
        forge({ keyBytes: bytes, header: { alg: 'HS384', typ: 'sbx-cap+jwt' }, hash: 'sha384' }),
      ),
    ).toBe('bad_signature');
    expect(refusalOf(verifier, signedWith({ typ: 'sbx-cap+jwt' }))).toBe('bad_signature');
  });

  it('refuses RS256 / ES256 headers HMAC-signed with the key bytes (key confusion)', () => {
    for (const alg of ['RS256', 'ES256', 'PS256']) {
      expect(refusalOf(verifier, signedWith({ alg, typ: 'sbx-cap+jwt' }))).toBe('bad_signature');
    }
  });
});

describe('signature attacks', () => {
  it('refuses a payload escalated to fs:rw shell under the original signature', () => {
    const { token, claims } = mintCapabilityToken({
      key,
      issuer: ISSUER,
      subject: 'user_xyz',
      sandboxId: SANDBOX_A,
      scopes: ['fs:ro'],
      ttlSeconds: 300,
      now: clock.now,
    });
    const [head, , sig] = segments(token);
    const escalated = b64json({ ...claims, scope: 'fs:rw shell' });
    expect(verifier.verify(token).scopes).toEqual(['fs:ro']);
    expect(refusalOf(verifier, `${head}.${escalated}.${sig}`)).toBe('bad_signature');
  });

  it('refuses a signature from another key', () => {
    expect(refusalOf(verifier, forge({ keyBytes: newTestKey().bytes }))).toBe('bad_signature');
  });

  it('refuses a truncated, an empty and a flipped signature', () => {
    const [head, body, sig] = segments(signedWith(GOOD_HEADER));
    expect(refusalOf(verifier, `${head}.${body}.${sig.slice(0, -1)}`)).toBe('bad_signature');
    expect(refusalOf(verifier, `${head}.${body}.${sig.slice(0, 22)}`)).toBe('bad_signature');
    expect(refusalOf(verifier, `${head}.${body}.`)).toBe('bad_signature');
    const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
    expect(refusalOf(verifier, `${head}.${body}.${flipped}`)).toBe('bad_signature');
  });

  it('refuses a signature over different bytes of the same JSON (no re-encoding tricks)', () => {
    const [, body, sig] = segments(signedWith(GOOD_HEADER));
    const spacedHeader = Buffer.from('{"alg":"HS256", "typ":"sbx-cap+jwt"}').toString('base64url');
    expect(refusalOf(verifier, `${spacedHeader}.${body}.${sig}`)).toBe('bad_signature');
  });
});

describe('header attacks', () => {
  it.each([
    ['crit', { crit: ['exp'], exp: 1 }],
    ['jku', { jku: 'https://evil.example/jwks.json' }],
    ['x5u', { x5u: 'https://evil.example/cert.pem' }],
    ['jwk', { jwk: { kty: 'oct', k: 'AAAA' } }],
    ['x5c', { x5c: ['MIIB'] }],
    ['b64', { b64: false }],
    ['kid', { kid: '../../dev/null' }],
  ])('refuses a header carrying %s', (_name, extra) => {
    expect(refusalOf(verifier, signedWith({ ...GOOD_HEADER, ...extra }))).toBe('malformed');
  });

  it('refuses typ missing, JWT, at+jwt, wrong case', () => {
    for (const typ of [undefined, 'JWT', 'at+jwt', 'SBX-CAP+JWT', '', 7]) {
      expect(refusalOf(verifier, signedWith({ alg: 'HS256', typ }))).toBe('wrong_type');
    }
  });

  it('refuses a header that is not a JSON object', () => {
    for (const header of [['HS256'], 'HS256', null, 42, true]) {
      expect(refusalOf(verifier, signedWith(header))).toBe('malformed');
    }
  });

  it('refuses a header that is not JSON or not UTF-8', () => {
    const body = b64json(goodClaims());
    for (const raw of [Buffer.from('{"alg":"HS256",'), Buffer.from([0x7b, 0xff, 0xfe, 0x7d])]) {
      const head = raw.toString('base64url');
      expect(refusalOf(verifier, `${head}.${body}.${hmac('sha256', bytes, `${head}.${body}`)}`)).toBe(
        'malformed',
      );
    }
  });
});

describe('payload shape', () => {
  it.each([
    ['an array', [goodClaims()]],
    ['a number', 1_768_478_700],
    ['a string', 'fs:rw'],
    ['null', null],
  ])('refuses a validly signed payload that is %s', (_name, payload) => {
    expect(refusalOf(verifier, signedWith(GOOD_HEADER, payload))).toBe('malformed');
  });

  it('refuses a header or payload that starts with a byte-order mark', () => {
    const bom = (value: unknown) => Buffer.from(`\uFEFF${JSON.stringify(value)}`).toString('base64url');
    for (const [head, body] of [
      [bom(GOOD_HEADER), b64json(goodClaims())],
      [b64json(GOOD_HEADER), bom(goodClaims())],
    ] as const) {
      expect(refusalOf(verifier, `${head}.${body}.${hmac('sha256', bytes, `${head}.${body}`)}`)).toBe(
        'malformed',
      );
    }
  });

  it('refuses a payload that is not JSON', () => {
    const head = b64json(GOOD_HEADER);
    const body = Buffer.from('{"exp":').toString('base64url');
    expect(refusalOf(verifier, `${head}.${body}.${hmac('sha256', bytes, `${head}.${body}`)}`)).toBe(
      'malformed',
    );
  });
});

describe('compact serialization', () => {
  const good = signedWith(GOOD_HEADER);
  const [head, body, sig] = segments(good);

  it('refuses 1, 2, 4 and 5 segments', () => {
    expect(refusalOf(verifier, head)).toBe('malformed');
    expect(refusalOf(verifier, `${head}.${body}`)).toBe('malformed');
    expect(refusalOf(verifier, `${good}.${sig}`)).toBe('malformed');
    expect(refusalOf(verifier, `${good}.`)).toBe('malformed');
    expect(refusalOf(verifier, `${good}.${head}.${body}`)).toBe('malformed');
  });

  it('refuses non-base64url characters in each segment', () => {
    for (const bad of ['+', '/', '=', ' ', '*', '\n']) {
      expect(refusalOf(verifier, `${head}${bad}.${body}.${sig}`)).toBe('malformed');
      expect(refusalOf(verifier, `${head}.${bad}${body}.${sig}`)).toBe('malformed');
      expect(refusalOf(verifier, `${head}.${body}.${bad}${sig.slice(1)}`)).toBe('malformed');
    }
    expect(refusalOf(verifier, `${head}.${body}.${sig}=`)).toBe('malformed');
  });

  it('refuses an impossible base64url length and empty header or payload', () => {
    const impossible = head + 'A'.repeat((5 - (head.length % 4)) % 4);
    expect(impossible.length % 4).toBe(1);
    expect(refusalOf(verifier, `${impossible}.${body}.${sig}`)).toBe('malformed');
    expect(refusalOf(verifier, `.${body}.${sig}`)).toBe('malformed');
    expect(refusalOf(verifier, `${head}..${sig}`)).toBe('malformed');
  });

  it('reports missing for no token at all', () => {
    for (const token of [undefined, null, '', 42, {}]) expect(refusalOf(verifier, token)).toBe('missing');
  });

  it(`refuses anything longer than ${MAX_TOKEN_LENGTH} characters before parsing`, () => {
    const padded = signedWith(GOOD_HEADER, goodClaims({ pad: 'x'.repeat(MAX_TOKEN_LENGTH) }));
    expect(refusalOf(verifier, padded)).toBe('malformed');
  });
});
