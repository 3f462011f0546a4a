// The admin inventory's reads: sandboxes and bindings of every tenant, one
// sandbox with what it issued and what happened to it. No owner scoping here:
// only `/admin/*` uses this, behind the admin:sandbox check.
import type {
  AuditEvent,
  PrismaClient,
  Sandbox,
  SandboxState,
  SessionBinding,
  TokenIssuance,
} from './generated/client.js';
import { guard } from './db-errors.js';
import {
  afterPosition,
  createdWindow,
  NEWEST_FIRST,
  pageOf,
  type Page,
  type PageRequest,
} from './admin-page.js';

export interface AdminSandboxFilter {
  readonly tenantId?: string | undefined;
  readonly ownerId?: string | undefined;
  readonly state?: SandboxState | undefined;
  readonly provider?: string | undefined;
  readonly threadId?: string | undefined;
  readonly createdAfter?: Date | undefined;
  readonly createdBefore?: Date | undefined;
}

export interface AdminBindingFilter {
  readonly tenantId?: string | undefined;
  readonly ownerId?: string | undefined;
  readonly live?: boolean | undefined;
  readonly sandboxId?: string | undefined;
  readonly threadId?: string | undefined;
  readonly actorId?: string | undefined;
  readonly createdAfter?: Date | undefined;
  readonly createdBefore?: Date | undefined;
}

export type AdminSandboxRow = Sandbox & { readonly liveBindings: number };

export interface AdminSandboxDetailRows {
  readonly sandbox: AdminSandboxRow;
  readonly bindings: SessionBinding[];
  readonly tokens: TokenIssuance[];
  readonly audit: AuditEvent[];
}

/** How much of a sandbox's history one detail answer carries (the audit query has the rest). */
export const DETAIL_TOKENS = 100;
export const DETAIL_AUDIT = 50;

const LIVE_COUNT = { _count: { select: { bindings: { where: { live: true } } } } } as const;

function withCount({ _count, ...sandbox }: Sandbox & { _count: { bindings: number } }): AdminSandboxRow {
  return { ...sandbox, liveBindings: _count.bindings };
}

const thread = (threadId: string | undefined) =>
  threadId === undefined ? {} : { scopeType: 'thread' as const, scopeId: threadId };

export class AdminInventoryQueries {
  constructor(private readonly prisma: PrismaClient) {}

  listSandboxes(filter: AdminSandboxFilter, page: PageRequest): Promise<Page<AdminSandboxRow>> {
    return guard('list sandboxes', async () => {
      const rows = await this.prisma.sandbox.findMany({
        where: {
          AND: [
            {
              tenantId: filter.tenantId,
              ownerId: filter.ownerId,
              state: filter.state,
              provider: filter.provider,
              ...thread(filter.threadId),
              ...createdWindow(filter.createdAfter, filter.createdBefore),
            },
            afterPosition(page.after),
          ],
        },
        include: LIVE_COUNT,
        orderBy: NEWEST_FIRST,
        take: page.limit + 1,
      });
      return pageOf(rows.map(withCount), page.limit);
    });
  }

  listBindings(filter: AdminBindingFilter, page: PageRequest): Promise<Page<SessionBinding>> {
    return guard('list bindings', async () => {
      const rows = await this.prisma.sessionBinding.findMany({
        where: {
          AND: [
            {
              tenantId: filter.tenantId,
              ownerId: filter.ownerId,
              sandboxId: filter.sandboxId,
              actorId: filter.actorId,
              ...(filter.live === undefined ? {} : { live: filter.live ? true : null }),
              ...thread(filter.threadId),
              ...createdWindow(filter.createdAfter, filter.createdBefore),
            },
            afterPosition(page.after),
          ],
        },
        orderBy: NEWEST_FIRST,
        take: page.limit + 1,
      });
      return pageOf(rows, page.limit);
    });
  }

  findSandbox(id: string): Promise<AdminSandboxRow | null> {
    return guard('find sandbox', async () => {
      const row = await this.prisma.sandbox.findUnique({ where: { id }, include: LIVE_COUNT });
      return row === null ? null : withCount(row);
    });
  }

  sandboxDetail(id: string): Promise<AdminSandboxDetailRows | null> {
    return guard('read sandbox detail', async () => {
      const sandbox = await this.findSandbox(id);
      if (sandbox === null) return null;
      const [bindings, tokens, audit] = await Promise.all([
        this.prisma.sessionBinding.findMany({ where: { sandboxId: id }, orderBy: { createdAt: 'asc' } }),
        this.prisma.tokenIssuance.findMany({
          where: { audience: id },
          orderBy: { issuedAt: 'desc' },
          take: DETAIL_TOKENS,
        }),
        this.prisma.auditEvent.findMany({
          where: { sandboxId: id },
          orderBy: { id: 'desc' },
          take: DETAIL_AUDIT,
        }),
      ]);
      return { sandbox, bindings, tokens, audit };
    });
  }
}
