// `GET /admin/usage`: usage per tenant and UTC day, JSON or CSV (docs/admin.md, "Usage").
import { Router, type RequestHandler } from 'express';
import { UsageQuery } from '@sbx/protocol';
import type { AdminAudit } from '../../domain/admin/admin-audit.js';
import { writeUsageCsv } from '../../domain/admin/usage-csv.js';
import { usageReport } from '../../domain/admin/usage-report.js';
import type { AdminUsageQueries } from '../../store/admin-usage-queries.js';
import { adminRoute, noTarget, queryOf } from './admin-kit.js';
import { sinkOf } from './admin-export-routes.js';

export interface AdminUsageRoutesDeps {
  readonly authenticate: RequestHandler;
  readonly audit: AdminAudit;
  readonly usageQueries: AdminUsageQueries;
  readonly clock: () => number;
}

export function adminUsageRoutes({ authenticate, audit, usageQueries, clock }: AdminUsageRoutesDeps): Router {
  const router = Router();
  router.get(
    '/admin/usage',
    authenticate,
    adminRoute(audit, 'admin.usage.get', noTarget, async (req) => {
      const query = queryOf(UsageQuery, req);
      // Computed before any header is sent: a failed query is still an error envelope.
      const report = await usageReport(usageQueries, query, clock());
      if (query.format === 'json') return { status: 200, body: report };
      return {
        status: 200,
        stream: async (res) => {
          res.status(200);
          res.setHeader('Content-Type', 'text/csv; charset=utf-8');
          res.setHeader('Content-Disposition', `attachment; filename="usage_${query.from}_${query.to}.csv"`);
          res.setHeader('Cache-Control', 'no-store');
          await writeUsageCsv(report.items, sinkOf(res));
          res.end();
        },
      };
    }),
  );
  return router;
}
