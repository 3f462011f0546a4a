// The RFC 8693 `act` claim (docs/protocol.md#token-exchange): minted on
// request, accepted and returned by the agent's verifier, kept by downscope,
// refused when malformed.
import { describe, expect, it } from '@jest/globals';
import { createVerifier, downscope, mintCapabilityToken } from '../src/index.js';
import { fixedClock, forge, goodClaims, ISSUER, MAX_TTL, newTestKey, refusalOf, SANDBOX_A } from './forge.js';

const { key, bytes } = newTestKey();
const clock = fixedClock();
const verifier = createVerifier({
  keys: key,
  issuer: ISSUER,
  audience: SANDBOX_A,
  maxTtlSeconds: MAX_TTL,
  now: clock.now,
});

describe('act claim', () => {
  it('is minted, verified and kept by downscope', () => {
    const minted = mintCapabilityToken({
      key,
      issuer: ISSUER,
      subject: 'user_1',
      sandboxId: SANDBOX_A,
      scopes: ['fs:rw'],
      ttlSeconds: 300,
      actor: { sub: 'agent_2', act: { sub: 'agent_1' } },
      now: clock.now,
    });
    const verified = verifier.verify(minted.token);
    expect(verified.claims.act).toEqual({ sub: 'agent_2', act: { sub: 'agent_1' } });
    const narrower = downscope({ verified, key, scopes: ['fs:ro'], ttlSeconds: 60, now: clock.now });
    expect(verifier.verify(narrower.token).claims.act).toEqual({ sub: 'agent_2', act: { sub: 'agent_1' } });
  });

  it('is absent from tokens minted without an actor', () => {
    const token = forge({ keyBytes: bytes });
    expect(verifier.verify(token).claims).not.toHaveProperty('act');
  });

  it('keeps only sub (and a nested act) of a well-formed act', () => {
    const token = forge({ keyBytes: bytes, payload: goodClaims({ act: { sub: 'agent_1', extra: 1 } }) });
    expect(verifier.verify(token).claims.act).toEqual({ sub: 'agent_1' });
  });

  it.each([
    ['a string', 'agent_1'],
    ['no sub', {}],
    ['an empty sub', { sub: '' }],
    ['a nested act without sub', { sub: 'a', act: { id: 'b' } }],
    [
      'a chain too deep',
      { sub: '1', act: { sub: '2', act: { sub: '3', act: { sub: '4', act: { sub: '5' } } } } },
    ],
  ])('refuses %s as malformed', (_name, act) => {
    expect(refusalOf(verifier, forge({ keyBytes: bytes, payload: goodClaims({ act }) }))).toBe('malformed');
  });
});
