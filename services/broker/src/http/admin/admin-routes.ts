// The operators' admin API (docs/admin.md): every route behind caller
// authentication and admin:sandbox, every request audited.
import type { RequestHandler, Router } from 'express';
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';
import { AdminApiKeys } from '../../domain/admin/admin-api-keys.js';
import { AdminAudit } from '../../domain/admin/admin-audit.js';
import { AdminSandboxes } from '../../domain/admin/admin-sandboxes.js';
import { resolveLifecycleTimers } from '../../domain/lifecycle/lifecycle-settings.js';
import type { SandboxProvider } from '../../providers/provider.js';
import { AdminAuditQueries } from '../../store/admin-audit-queries.js';
import { AdminInventoryQueries } from '../../store/admin-inventory-queries.js';
import { AdminKeyQueries } from '../../store/admin-key-queries.js';
import { AdminUsageQueries } from '../../store/admin-usage-queries.js';
import type { PrismaClient } from '../../store/generated/client.js';
import type { Repositories } from '../../store/index.js';
import { ReaperRepository } from '../../store/reaper-repository.js';
import { adminConfigRoutes } from './admin-config-routes.js';
import { adminExportRoutes } from './admin-export-routes.js';
import { adminInvocationRoutes } from './admin-invocation-routes.js';
import { adminSandboxRoutes } from './admin-sandbox-routes.js';
import { adminUsageRoutes } from './admin-usage-routes.js';

/** What the composition root hands the admin API besides what every route family gets. */
export interface AdminAssembly {
  readonly prisma: PrismaClient;
  readonly provider: Pick<SandboxProvider, 'stop' | 'destroy' | 'inspect'>;
  readonly repositories: Pick<Repositories, 'apiKeys' | 'policies' | 'audit' | 'invocations'>;
  /** The lease reaper's idle timeout: deadlines are its timers (state-deadlines.ts). */
  readonly idleTimeoutMs: number;
}

export interface AdminRoutesDeps extends AdminAssembly {
  readonly authenticate: RequestHandler;
  readonly coordination: Coordination;
  readonly clock: () => number;
  readonly logger: Logger;
}

export function adminRoutes(deps: AdminRoutesDeps): Router[] {
  const { prisma, repositories, clock, logger } = deps;
  const audit = new AdminAudit(repositories.audit, logger);
  const sandboxes = new AdminSandboxes({
    queries: new AdminInventoryQueries(prisma),
    reaper: new ReaperRepository(prisma),
    provider: deps.provider,
    coordination: deps.coordination,
    timers: resolveLifecycleTimers({ idleTimeoutMs: deps.idleTimeoutMs }),
    clock,
    logger,
  });
  const auditQueries = new AdminAuditQueries(prisma);
  const keys = new AdminApiKeys({
    apiKeys: repositories.apiKeys,
    queries: new AdminKeyQueries(prisma),
    clock,
  });
  return [
    adminExportRoutes({ authenticate: deps.authenticate, audit, auditQueries }),
    adminSandboxRoutes({ authenticate: deps.authenticate, audit, sandboxes }),
    adminInvocationRoutes({ authenticate: deps.authenticate, audit, invocations: repositories.invocations }),
    adminUsageRoutes({
      authenticate: deps.authenticate,
      audit,
      usageQueries: new AdminUsageQueries(prisma),
      clock,
    }),
    adminConfigRoutes({
      authenticate: deps.authenticate,
      audit,
      policies: repositories.policies,
      keys,
      auditQueries,
    }),
  ];
}
