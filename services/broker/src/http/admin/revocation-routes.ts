// `POST /admin/revocations` (docs/security.md#revocation): `{jti}`, `{session_id}` or
// `{sandbox_id}`, for callers holding `admin:sandbox` only; every call is audited as
// `token.revoke`, refusals included.
import { Router } from 'express';
import { RevocationRequest, SbxError, type RevocationResponse } from '@sbx/protocol';
import { isAdmin } from '../../domain/auth/principal.js';
import type { Revocations } from '../../domain/revocation/revocations.js';
import { principalOf } from '../auth/caller-auth-middleware.js';
import { bodyOf, callContext, rateLimit, type SessionHttpDeps } from '../sessions/route-kit.js';

export interface RevocationRoutesDeps extends SessionHttpDeps {
  readonly revocations: Revocations;
}

export function revocationRoutes(deps: RevocationRoutesDeps): Router {
  const router = Router();
  router.post(
    '/admin/revocations',
    deps.authenticate,
    rateLimit(deps, 'session', 'token.revoke'),
    async (req, res) => {
      const context = callContext(res);
      if (!isAdmin(principalOf(res))) {
        const refusal = new SbxError('FORBIDDEN', 'revocation needs the caller scope admin:sandbox');
        await deps.audit.record('token.revoke', refusal.code, context);
        throw refusal;
      }
      const outcome = await deps.revocations.revoke(context, bodyOf(RevocationRequest, req));
      const body: RevocationResponse = {
        sandbox_ids: [...outcome.sandboxIds],
        revoked_tokens: outcome.revokedTokens,
        key_rotated: outcome.keyRotated,
      };
      res.json(body);
    },
  );
  return router;
}
