import type { RequestHandler } from 'express';
import { SbxError, type CallerScope } from '@sbx/protocol';
import { hasCallerScope, isAdmin } from '../../domain/auth/principal.js';
import { principalOf } from '../auth/caller-auth-middleware.js';

/**
 * 403 unless the caller holds `scope` (admin:sandbox holds every one). The resource API
 * authorizes on the kind of operation, never on the HTTP method: a PTY needs
 * attach:sandbox, and exec:sandbox does not imply it.
 */
export function needs(scope: CallerScope): RequestHandler {
  return (_req, res, next) => {
    const principal = principalOf(res);
    if (!hasCallerScope(principal, scope) && !isAdmin(principal))
      throw new SbxError('FORBIDDEN', `this operation needs the caller scope ${scope}`);
    next();
  };
}
