// `GET /admin/audit/export`: the audit selection as JSON lines or CSV, streamed.
import { once } from 'node:events';
import { Router, type RequestHandler, type Response } from 'express';
import { AuditExportQuery } from '@sbx/protocol';
import type { AdminAudit } from '../../domain/admin/admin-audit.js';
import { EXPORT_CONTENT_TYPES, exportAudit, type ExportSink } from '../../domain/admin/audit-export.js';
import type { AdminAuditQueries } from '../../store/admin-audit-queries.js';
import { adminRoute, noTarget, queryOf } from './admin-kit.js';

export interface AdminExportRoutesDeps {
  readonly authenticate: RequestHandler;
  readonly audit: AdminAudit;
  readonly auditQueries: AdminAuditQueries;
}

/** Writes to the response, waiting for `drain` when its buffer is full. */
export function sinkOf(res: Response): ExportSink {
  return {
    get closed() {
      return res.destroyed || res.writableEnded;
    },
    async write(chunk) {
      if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
    },
  };
}

export function adminExportRoutes({ authenticate, audit, auditQueries }: AdminExportRoutesDeps): Router {
  const router = Router();
  router.get(
    '/admin/audit/export',
    authenticate,
    adminRoute(audit, 'admin.audit.export', noTarget, async (req) => {
      // Parsed before any header is sent, so a bad query is still a 400 envelope.
      const query = queryOf(AuditExportQuery, req);
      return {
        status: 200,
        stream: async (res) => {
          res.status(200);
          res.setHeader('Content-Type', EXPORT_CONTENT_TYPES[query.format]);
          res.setHeader('Content-Disposition', `attachment; filename="audit.${query.format}"`);
          res.setHeader('Cache-Control', 'no-store');
          await exportAudit(auditQueries, query, sinkOf(res));
          res.end();
        },
      };
    }),
  );
  return router;
}
