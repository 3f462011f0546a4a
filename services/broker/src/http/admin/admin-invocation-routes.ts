// `GET /admin/invocations` and `GET /admin/invocations/export` (docs/execute-code.md
// "Operators"): execute_code's audit rows across tenants, admin:sandbox only, audited.
import { Router, type RequestHandler } from 'express';
import { InvocationExportQuery, InvocationQuery } from '@sbx/protocol';
import type { AdminAudit } from '../../domain/admin/admin-audit.js';
import { exportInvocations, invocationPage } from '../../domain/admin/admin-invocations.js';
import { EXPORT_CONTENT_TYPES } from '../../domain/admin/audit-export.js';
import type { InvocationRepository } from '../../store/index.js';
import { sinkOf } from './admin-export-routes.js';
import { adminRoute, noTarget, queryOf } from './admin-kit.js';

export interface AdminInvocationRoutesDeps {
  readonly authenticate: RequestHandler;
  readonly audit: AdminAudit;
  readonly invocations: Pick<InvocationRepository, 'list'>;
}

export function adminInvocationRoutes({
  authenticate,
  audit,
  invocations,
}: AdminInvocationRoutesDeps): Router {
  const router = Router();
  router.get(
    '/admin/invocations/export',
    authenticate,
    adminRoute(audit, 'admin.invocations.export', noTarget, async (req) => {
      const query = queryOf(InvocationExportQuery, req);
      return {
        status: 200,
        stream: async (res) => {
          res.status(200);
          res.setHeader('Content-Type', EXPORT_CONTENT_TYPES[query.format]);
          res.setHeader('Content-Disposition', `attachment; filename="invocations.${query.format}"`);
          res.setHeader('Cache-Control', 'no-store');
          await exportInvocations(invocations, query, sinkOf(res));
          res.end();
        },
      };
    }),
  );
  router.get(
    '/admin/invocations',
    authenticate,
    adminRoute(audit, 'admin.invocations.list', noTarget, async (req) => ({
      status: 200,
      body: await invocationPage(invocations, queryOf(InvocationQuery, req)),
    })),
  );
  return router;
}
