import { randomUUID, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createOidcVerifier, type OidcVerifierOptions } from '../../src/domain/auth/oidc-verifier.js';
import {
  compactJws,
  hmacWithPublicKey,
  startTestOidcIssuer,
  type TestOidcIssuer,
} from '../support/test-oidc-issuer.js';

let issuer: TestOidcIssuer;
beforeAll(async () => {
  issuer = await startTestOidcIssuer();
});
afterAll(() => issuer.close());

/** A fresh verifier has an empty key cache and a full JWKS request budget. */
const verifierFor = (options: Partial<OidcVerifierOptions> = {}) =>
  createOidcVerifier({
    issuer: issuer.issuer,
    audience: issuer.audience,
    jwksUri: issuer.jwksUri,
    ...options,
  });

const nowSeconds = () => Math.floor(Date.now() / 1000);
const baseClaims = () => ({
  iss: issuer.issuer,
  aud: issuer.audience,
  sub: 'user-1',
  exp: nowSeconds() + 300,
});

describe('OIDC access token verification', () => {
  it.each(['RS256', 'ES256'] as const)('accepts a %s token from the trusted issuer', async (alg) => {
    const token = issuer.sign({ sub: 'alice', jti: 'tok-1', scope: 'read:sandbox' }, { alg });
    const principal = await verifierFor().verify(token);
    expect(principal).toMatchObject({
      id: 'alice',
      ownerId: 'alice',
      type: 'user',
      via: 'oidc',
      jti: 'tok-1',
    });
    expect([...principal.scopes]).toEqual(['read:sandbox']);
  });

  const forgeries: [string, RegExp, () => string][] = [
    [
      'alg none, unsigned',
      /alg must be one of RS256, ES256/,
      () => compactJws({ alg: 'none', kid: issuer.key('RS256').kid }, baseClaims(), () => Buffer.alloc(0)),
    ],
    [
      'alg none with a signature',
      /alg must be one of/,
      () => compactJws({ alg: 'none', kid: issuer.key('RS256').kid }, baseClaims(), () => Buffer.from('x')),
    ],
    [
      'HS256 keyed with the RSA public key (algorithm confusion)',
      /alg must be one of/,
      () =>
        compactJws({ alg: 'HS256', kid: issuer.key('RS256').kid }, baseClaims(), (input) =>
          hmacWithPublicKey(issuer.key('RS256'), input),
        ),
    ],
    [
      'HS256 keyed with the EC public key',
      /alg must be one of/,
      () =>
        compactJws({ alg: 'HS256', kid: issuer.key('ES256').kid }, baseClaims(), (input) =>
          hmacWithPublicKey(issuer.key('ES256'), input),
        ),
    ],
    [
      'a key the issuer never published',
      /unknown key/,
      () => issuer.sign({}, { key: issuer.addKey('RS256', { publish: false }) }),
    ],
    [
      'a foreign key claiming a published kid',
      /signature does not verify/,
      () =>
        issuer.sign(
          {},
          { key: issuer.addKey('RS256', { publish: false }), header: { kid: issuer.key('RS256').kid } },
        ),
    ],
    [
      'RS256 claimed for the EC key',
      /alg does not match the key/,
      () =>
        issuer.sign(
          {},
          { key: issuer.addKey('RS256', { publish: false }), header: { kid: issuer.key('ES256').kid } },
        ),
    ],
    [
      'an ES256 signature in DER instead of JOSE form',
      /signature does not verify/,
      () =>
        compactJws({ alg: 'ES256', kid: issuer.key('ES256').kid, typ: 'at+jwt' }, baseClaims(), (input) =>
          sign('sha256', input, issuer.key('ES256').privateKey),
        ),
    ],
    [
      'a 1024-bit RSA key, even one the issuer publishes',
      /signature does not verify/,
      () => issuer.sign({}, { key: issuer.addKey('RS256', { modulusLength: 1024 }) }),
    ],
    ['an untrusted issuer', /issuer/, () => issuer.sign({ iss: 'https://evil.example' })],
    ['another audience', /audience/, () => issuer.sign({ aud: 'https://other-api.example' })],
    ['an audience list without this broker', /audience/, () => issuer.sign({ aud: ['a', 'b'] })],
    ['no exp', /exp is missing/, () => issuer.sign({ exp: undefined })],
    ['exp as a string', /exp is missing/, () => issuer.sign({ exp: String(nowSeconds() + 300) })],
    ['expired an hour ago', /expired/, () => issuer.sign({ exp: nowSeconds() - 3600 })],
    ['no sub', /sub is missing/, () => issuer.sign({ sub: undefined })],
    ['a tampered payload', /signature does not verify/, () => tamper(issuer.sign({ scope: 'read:sandbox' }))],
    [
      'a header that demands an extension',
      /crit/,
      () => issuer.sign({}, { header: { crit: ['b64'], b64: false } }),
    ],
    ['three segments of garbage', /not UTF-8 JSON|base64url/, () => 'a.b.c'],
  ];

  it.each(forgeries)('refuses %s with UNAUTHENTICATED', async (_name, reason, forge) => {
    await expect(verifierFor().verify(forge())).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
      status: 401,
      message: expect.stringMatching(reason),
    });
  });

  it('accepts an audience list that includes this broker', async () => {
    const principal = await verifierFor().verify(issuer.sign({ aud: ['other', issuer.audience] }));
    expect(principal.id).toBe('user-1');
  });

  it('forgives up to 30 s of clock skew on exp and nbf, and no more', async () => {
    const now = Date.now();
    const at = Math.floor(now / 1000);
    const verifier = verifierFor({ now: () => now });
    await expect(verifier.verify(issuer.sign({ exp: at - 29 }))).resolves.toMatchObject({ id: 'user-1' });
    await expect(verifier.verify(issuer.sign({ exp: at - 31 }))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    await expect(verifier.verify(issuer.sign({ nbf: at + 29 }))).resolves.toMatchObject({ id: 'user-1' });
    await expect(verifier.verify(issuer.sign({ nbf: at + 31 }))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    expect(() => verifierFor({ clockToleranceSeconds: 60 })).toThrow(RangeError);
  });

  it('fetches the JWKS once per key, and once more for a rotated-in key', async () => {
    const verifier = verifierFor();
    const before = issuer.jwksRequests;
    await verifier.verify(issuer.sign());
    await verifier.verify(issuer.sign());
    expect(issuer.jwksRequests - before).toBe(1);

    const rotated = issuer.addKey('ES256');
    await expect(verifier.verify(issuer.sign({ sub: 'bob' }, { key: rotated }))).resolves.toMatchObject({
      id: 'bob',
    });
    await verifier.verify(issuer.sign({}, { key: rotated }));
    expect(issuer.jwksRequests - before).toBe(2);
  });

  it('stops trusting a withdrawn key once it has left the key cache', async () => {
    const retiring = issuer.addKey('RS256');
    const verifier = verifierFor({ keyCacheMaxAgeMs: 1 });
    await verifier.verify(issuer.sign({}, { key: retiring }));
    issuer.withdraw(retiring);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await expect(verifier.verify(issuer.sign({}, { key: retiring }))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });

  it('answers a flood of unknown kids with at most the rate limit of JWKS requests', async () => {
    const limit = 3;
    let now = Date.now();
    const verifier = verifierFor({ jwksRequestsPerMinute: limit, now: () => now });
    const before = issuer.jwksRequests;
    await verifier.verify(issuer.sign());
    const rogue = issuer.addKey('RS256', { publish: false });
    const madeUpKid = () => issuer.sign({}, { key: rogue, header: { kid: randomUUID() } });
    const concurrent = await Promise.allSettled(
      Array.from({ length: 40 }, () => verifier.verify(madeUpKid())),
    );
    for (let i = 0; i < 40; i++) {
      await expect(verifier.verify(madeUpKid())).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    }
    expect(concurrent.every((r) => r.status === 'rejected' && hasCode(r.reason, 'UNAUTHENTICATED'))).toBe(
      true,
    );
    expect(issuer.jwksRequests - before).toBe(limit);
    // Keys already known keep working while the budget is spent.
    await expect(verifier.verify(issuer.sign({ sub: 'carol' }))).resolves.toMatchObject({ id: 'carol' });

    // A minute later the budget is back: a key rotated in meanwhile is found.
    const rotated = issuer.addKey('RS256');
    await expect(verifier.verify(issuer.sign({}, { key: rotated }))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    now += 60_000;
    await expect(verifier.verify(issuer.sign({ sub: 'dan' }, { key: rotated }))).resolves.toMatchObject({
      id: 'dan',
    });
    expect(issuer.jwksRequests - before).toBe(limit + 1);
  });

  it('answers BACKEND_UNAVAILABLE (503) when the JWKS cannot be fetched', async () => {
    issuer.failJwks(500);
    try {
      await expect(verifierFor().verify(issuer.sign())).rejects.toMatchObject({
        code: 'BACKEND_UNAVAILABLE',
        status: 503,
        retryable: true,
      });
    } finally {
      issuer.failJwks(undefined);
    }
    const gone = await startTestOidcIssuer();
    const token = gone.sign({ iss: issuer.issuer });
    await gone.close();
    const unreachable = verifierFor({ jwksUri: gone.jwksUri });
    await expect(unreachable.verify(token)).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });

  it('never puts the token in an error message', async () => {
    const token = issuer.sign({ aud: 'elsewhere' });
    const error: unknown = await verifierFor()
      .verify(token)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).not.toContain(token.split('.')[1]);
    expect(String(error)).not.toContain(token.split('.')[2]);
  });
});

function hasCode(reason: unknown, code: string): boolean {
  return typeof reason === 'object' && reason !== null && 'code' in reason && reason.code === code;
}

/** The same signature over a payload granting more. */
function tamper(token: string): string {
  const [header, payload, signature] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8'));
  claims.scope = 'read:sandbox admin:sandbox';
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}
