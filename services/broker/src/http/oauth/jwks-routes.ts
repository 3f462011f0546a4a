// GET /.well-known/jwks.json: the public key of the pod-scoped JWTs the broker mints for
// client-policy sidecars (domain/tokens/sidecar-tokens.ts), for their upstreams to verify
// offline. Public by nature; cached briefly like any JWKS.
import { Router } from 'express';
import type { SidecarTokenMinter } from '../../domain/tokens/sidecar-tokens.js';

export const JWKS_PATH = '/.well-known/jwks.json';

export function jwksRoutes(minter: Pick<SidecarTokenMinter, 'jwks'>): Router {
  const router = Router();
  router.get(JWKS_PATH, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(minter.jwks());
  });
  return router;
}
