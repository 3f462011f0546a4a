import { createHmac } from 'node:crypto';
import { mintCapabilityToken, SigningKey, createVerifier } from '@sbx/tokens';
import { staticKeySource } from '../../services/agent/src/adapters/key-source.js';
import { createAuthenticator } from '../../services/agent/src/http/authenticator.js';
import { timeSync, type Verdict } from '../lib/measure.js';

/**
 * Token verification against its floor: raw HMAC-SHA256 over `header.payload` plus a
 * JSON parse of the payload — the least any verifier must do.
 */
export function benchTokenVerify(): Verdict[] {
  const key = SigningKey.generate();
  const now = Date.now();
  const tokens = Array.from(
    { length: 1000 },
    (_, i) =>
      mintCapabilityToken({
        key,
        issuer: 'bench',
        subject: `u${i}`,
        sandboxId: 'sb_bench',
        scopes: ['fs:rw', 'shell'],
        ttlSeconds: 900,
      }).token,
  );
  const verifier = createVerifier({ keys: key, issuer: 'bench', audience: 'sb_bench', maxTtlSeconds: 3600 });
  const auth = createAuthenticator({
    keys: staticKeySource(key.toBase64url()),
    sandboxId: 'sb_bench',
    issuer: 'bench',
    maxTtlSeconds: 3600,
    now: () => now,
  });

  const floor = timeSync('raw HMAC-SHA256 + JSON.parse', (i) => {
    const token = tokens[i % tokens.length] ?? '';
    const dot = token.lastIndexOf('.');
    createHmac('sha256', key.keyObject).update(token.slice(0, dot)).digest('base64url');
    return JSON.parse(
      Buffer.from(token.slice(token.indexOf('.') + 1, dot), 'base64url').toString('utf8'),
    ) as unknown;
  });
  const cold = timeSync('verify (no cache)', (i) => verifier.verify(tokens[i % tokens.length]));
  const repeated = tokens[0] ?? '';
  auth.authenticate(repeated);
  // A fresh copy of the string each time, as a new request header would be.
  const copies = Array.from({ length: 1000 }, () => `${repeated.slice(0, 10)}${repeated.slice(10)}`);
  const cached = timeSync(
    'verify (cached, same token)',
    (i) => auth.authenticate(copies[i % copies.length] ?? ''),
    200_000,
  );

  const coldRatio = cold.nsPerOp / floor.nsPerOp;
  return [
    {
      metric: 'token floor: raw HMAC + JSON.parse',
      value: floor.nsPerOp / 1000,
      unit: 'µs',
      target: '(floor)',
      pass: true,
    },
    {
      metric: 'token verify cold / floor',
      value: coldRatio,
      unit: '×',
      target: '≤ 3×',
      pass: coldRatio <= 3,
    },
    {
      metric: 'token verify cached',
      value: cached.nsPerOp / 1000,
      unit: 'µs',
      target: '≤ 1 µs',
      pass: cached.nsPerOp <= 1000,
    },
  ];
}
