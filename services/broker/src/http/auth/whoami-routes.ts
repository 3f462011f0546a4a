// GET /v1/whoami: who the request's credential says the caller is (the principal behind an
// API key or OIDC token, its tenant, owner and caller scopes), so a client such as
// `sbx whoami` shows the broker's answer rather than a name of its own. Never the credential.
import { Router, type RequestHandler } from 'express';
import { CALLER_SCOPES, type WhoamiResponse } from '@sbx/protocol';
import type { Principal } from '../../domain/auth/principal.js';
import { principalOf } from './caller-auth-middleware.js';

export const WHOAMI_PATH = '/v1/whoami';

export function presentCaller(principal: Principal): WhoamiResponse {
  return {
    principal_id: principal.id,
    principal_type: principal.type,
    tenant_id: principal.tenantId,
    owner_id: principal.ownerId,
    credential: principal.via,
    scopes: CALLER_SCOPES.filter((scope) => principal.scopes.has(scope)),
    ...(principal.clientId === undefined ? {} : { client_id: principal.clientId }),
  };
}

export function whoamiRoutes(authenticate: RequestHandler): Router {
  const router = Router();
  router.get(WHOAMI_PATH, authenticate, (_req, res) => {
    res.set('Cache-Control', 'no-store').json(presentCaller(principalOf(res)));
  });
  return router;
}
