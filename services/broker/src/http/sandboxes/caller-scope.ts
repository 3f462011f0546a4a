import type { RequestHandler } from 'express';
import type { CallerScope } from '@sbx/protocol';
import { requireCallerScope } from '../../domain/auth/principal.js';
import { principalOf } from '../auth/caller-auth-middleware.js';

/**
 * 403 unless the caller holds `scope` itself. The resource API authorizes on the kind of
 * operation, never on the HTTP method: a PTY needs attach:sandbox, and exec:sandbox does not
 * imply it. Nor does admin:sandbox imply any: it lifts owner scoping, so an operator who
 * must open shells across tenants holds attach:sandbox as well (the sandboxd seed: admins
 * keep attach off by default).
 */
export function needs(scope: CallerScope): RequestHandler {
  return (_req, res, next) => {
    requireCallerScope(principalOf(res), scope);
    next();
  };
}
