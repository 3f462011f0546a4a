// Pod-scoped JWTs for client-policy sidecars (sandboxd authentication seed, "The
// client_id claim"): a credential-broker sidecar next to a sandbox proves to its
// upstream which sandbox, tenant and client it serves with a token the broker
// signs. ES256, so the upstream verifies offline against the broker's public key
// at `GET /.well-known/jwks.json` and cannot mint tokens itself. The key is derived
// from the master key (HKDF), so every broker instance sharing a database signs
// with the same key and publishes the same JWKS; rotating the master key rotates it.
import { createECDH, createHash, createPrivateKey, hkdfSync, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { MasterKey } from '../keys/master-key.js';

export const SIDECAR_TOKEN_ALGORITHM = 'ES256';
export const DEFAULT_SIDECAR_AUDIENCE = 'sbx-sidecar';

export interface SidecarClaims {
  readonly sandboxId: string;
  readonly tenantId: string;
  readonly clientId: string;
  /** The client policy's `sidecar_audience`; absent: `sbx-sidecar`. */
  readonly audience: string | undefined;
  readonly scopes: readonly string[];
  /** The sandbox's hard expiry: the token lives as long as the pod may. */
  readonly expiresAt: Date;
}

export interface PublicJwk {
  readonly kty: 'EC';
  readonly crv: 'P-256';
  readonly x: string;
  readonly y: string;
  readonly kid: string;
  readonly alg: typeof SIDECAR_TOKEN_ALGORITHM;
  readonly use: 'sig';
}

export interface SidecarTokenMinter {
  mint(claims: SidecarClaims): string;
  /** What `GET /.well-known/jwks.json` serves. */
  jwks(): { readonly keys: readonly PublicJwk[] };
}

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

function derivedKeyPair(master: MasterKey): { privateKey: KeyObject; jwk: PublicJwk } {
  const d = Buffer.from(hkdfSync('sha256', master.bytes, Buffer.alloc(0), 'sbx sidecar es256 v1', 32));
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey(); // 0x04 | x (32) | y (32)
  const [x, y] = [b64url(point.subarray(1, 33)), b64url(point.subarray(33, 65))];
  const kid = createHash('sha256').update(point).digest('base64url').slice(0, 16);
  const privateKey = createPrivateKey({
    key: { kty: 'EC', crv: 'P-256', x, y, d: b64url(d) },
    format: 'jwk',
  });
  return {
    privateKey,
    jwk: { kty: 'EC', crv: 'P-256', x, y, kid, alg: SIDECAR_TOKEN_ALGORITHM, use: 'sig' },
  };
}

export function createSidecarTokenMinter(
  master: MasterKey,
  issuer: string,
  now: () => number,
): SidecarTokenMinter {
  const { privateKey, jwk } = derivedKeyPair(master);
  return {
    mint(claims) {
      return jwt.sign(
        {
          sub: `sandbox:${claims.sandboxId}`,
          aud: claims.audience ?? DEFAULT_SIDECAR_AUDIENCE,
          iat: Math.floor(now() / 1000),
          exp: Math.floor(claims.expiresAt.getTime() / 1000),
          scope: claims.scopes.join(' '),
          client_id: claims.clientId,
          tenant_id: claims.tenantId,
          sandbox_id: claims.sandboxId,
        },
        privateKey,
        { algorithm: SIDECAR_TOKEN_ALGORITHM, keyid: jwk.kid, issuer },
      );
    },
    jwks: () => ({ keys: [jwk] }),
  };
}
