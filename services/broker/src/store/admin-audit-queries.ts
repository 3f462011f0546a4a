// The admin audit query: every tenant's events, newest first. Pages continue
// below the last id seen (ids only grow, so a page never repeats or skips a row).
import type { AuditEvent, PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';

export interface AdminAuditFilter {
  readonly tenantId?: string | undefined;
  readonly action?: string | undefined;
  readonly outcome?: string | undefined;
  readonly callerId?: string | undefined;
  readonly sandboxId?: string | undefined;
  readonly sessionId?: string | undefined;
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
}

export interface AuditPageRequest {
  /** Only events with a smaller id. */
  readonly beforeId?: bigint | undefined;
  readonly limit: number;
}

export interface AuditPage {
  readonly items: AuditEvent[];
  /** The id the next page continues below; absent on the last page. */
  readonly nextBeforeId?: bigint | undefined;
}

export class AdminAuditQueries {
  constructor(private readonly prisma: PrismaClient) {}

  list(filter: AdminAuditFilter, page: AuditPageRequest): Promise<AuditPage> {
    return guard('query audit', async () => {
      const at =
        filter.since === undefined && filter.until === undefined
          ? undefined
          : { gte: filter.since, lt: filter.until };
      const rows = await this.prisma.auditEvent.findMany({
        where: {
          tenantId: filter.tenantId,
          action: filter.action,
          outcome: filter.outcome,
          callerId: filter.callerId,
          sandboxId: filter.sandboxId,
          sessionId: filter.sessionId,
          ...(at === undefined ? {} : { at }),
          ...(page.beforeId === undefined ? {} : { id: { lt: page.beforeId } }),
        },
        orderBy: { id: 'desc' },
        take: page.limit + 1,
      });
      if (rows.length <= page.limit) return { items: rows };
      const items = rows.slice(0, page.limit);
      return { items, nextBeforeId: items.at(-1)?.id };
    });
  }
}
