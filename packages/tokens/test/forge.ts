import { createHmac, randomBytes } from 'node:crypto';
import { expect } from '@jest/globals';
import { SigningKey, TokenError, type CapabilityVerifier, type TokenErrorReason } from '../src/index.js';

/** Test helpers that build tokens by hand, byte by byte, the way an attacker would. */

export const ISSUER = 'sbx-broker';
export const SANDBOX_A = 'sbx_A';
export const SANDBOX_B = 'sbx_B';
export const MAX_TTL = 900;
/** 2026-01-15T12:00:00Z, in seconds. */
export const NOW = 1_768_478_400;

export interface TestKey {
  readonly bytes: Buffer;
  readonly key: SigningKey;
}

export function newTestKey(): TestKey {
  const bytes = randomBytes(32);
  return { bytes, key: SigningKey.fromBytes(bytes) };
}

/** A clock tests move by hand. */
export function fixedClock(seconds = NOW): { now: () => number; set: (s: number) => void } {
  let current = seconds * 1000;
  return { now: () => current, set: (s: number) => (current = s * 1000) };
}

export function b64json(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function hmac(hash: 'sha256' | 'sha384' | 'sha512', key: Buffer, input: string): string {
  return createHmac(hash, key).update(input).digest('base64url');
}

export const GOOD_HEADER = { alg: 'HS256', typ: 'sbx-cap+jwt' };

export function goodClaims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    iss: ISSUER,
    sub: 'user_xyz',
    aud: SANDBOX_A,
    scope: 'fs:ro',
    thread_id: 'thr_456',
    jti: 'tok_forged',
    iat: NOW,
    nbf: NOW,
    exp: NOW + 300,
    ...overrides,
  };
}

/** Omits claims named with `undefined` (JSON.stringify drops them). */
export function forge(options: {
  keyBytes: Buffer;
  header?: unknown;
  payload?: unknown;
  hash?: 'sha256' | 'sha384' | 'sha512';
}): string {
  const head = b64json('header' in options ? options.header : GOOD_HEADER);
  const body = b64json('payload' in options ? options.payload : goodClaims());
  return `${head}.${body}.${hmac(options.hash ?? 'sha256', options.keyBytes, `${head}.${body}`)}`;
}

/** The error `verify` throws (undefined if it accepts), after checking no part of the token leaked into it. */
export function refusalError(verifier: CapabilityVerifier, token: unknown): TokenError | undefined {
  try {
    verifier.verify(token);
  } catch (err) {
    if (!(err instanceof TokenError)) throw err;
    expectNoLeak(err, token);
    return err;
  }
  return undefined;
}

/** The refusal reason, or 'accepted'. Leaks are checked on the way. */
export function refusalOf(verifier: CapabilityVerifier, token: unknown): TokenErrorReason | 'accepted' {
  return refusalError(verifier, token)?.reason ?? 'accepted';
}

export function expectNoLeak(error: TokenError, token: unknown): void {
  if (typeof token !== 'string' || token === '') return;
  const seen = [
    error.message,
    String(error),
    error.stack ?? '',
    JSON.stringify(error.toSbxError().toEnvelope('req_1')),
    JSON.stringify(error.toEnvelope()),
  ].join('\n');
  expect(seen).not.toContain(token);
  for (const segment of token.split('.')) {
    if (segment.length >= 8) expect(seen).not.toContain(segment);
  }
}
