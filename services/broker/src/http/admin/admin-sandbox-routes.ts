// `/admin/sandboxes…` and `/admin/sessions`: inventory across tenants and the forced actions.
import { Router, type RequestHandler } from 'express';
import { AdminActionRequest, AdminIdParams, AdminSandboxQuery, AdminSessionQuery } from '@sbx/protocol';
import type { AdminAudit } from '../../domain/admin/admin-audit.js';
import type { AdminSandboxes } from '../../domain/admin/admin-sandboxes.js';
import { adminBodyOf, adminRoute, noTarget, paramsOf, queryOf, targetParam } from './admin-kit.js';

export interface AdminSandboxRoutesDeps {
  readonly authenticate: RequestHandler;
  readonly audit: AdminAudit;
  readonly sandboxes: AdminSandboxes;
}

export function adminSandboxRoutes({ authenticate, audit, sandboxes }: AdminSandboxRoutesDeps): Router {
  const router = Router();
  const sandbox = targetParam('sandbox', 'id');

  router.get(
    '/admin/sandboxes',
    authenticate,
    adminRoute(audit, 'admin.sandbox.list', noTarget, async (req) => ({
      status: 200,
      body: await sandboxes.list(queryOf(AdminSandboxQuery, req)),
    })),
  );

  router.get(
    '/admin/sandboxes/:id',
    authenticate,
    adminRoute(audit, 'admin.sandbox.get', sandbox, async (req) => ({
      status: 200,
      body: await sandboxes.get(paramsOf(AdminIdParams, req).id),
    })),
  );

  router.post(
    '/admin/sandboxes/:id/terminate',
    authenticate,
    adminRoute(audit, 'admin.sandbox.terminate', sandbox, async (req, context) => {
      const { id } = paramsOf(AdminIdParams, req);
      const { reason } = adminBodyOf(AdminActionRequest, req);
      return { status: 200, body: await sandboxes.terminate(id, { ...context, note: reason }) };
    }),
  );

  router.post(
    '/admin/sandboxes/:id/recover',
    authenticate,
    adminRoute(audit, 'admin.sandbox.recover', sandbox, async (req, context) => {
      const { id } = paramsOf(AdminIdParams, req);
      const { reason } = adminBodyOf(AdminActionRequest, req);
      return { status: 200, body: await sandboxes.recover(id, { ...context, note: reason }) };
    }),
  );

  router.get(
    '/admin/sessions',
    authenticate,
    adminRoute(audit, 'admin.session.list', noTarget, async (req) => ({
      status: 200,
      body: await sandboxes.listSessions(queryOf(AdminSessionQuery, req)),
    })),
  );

  return router;
}
