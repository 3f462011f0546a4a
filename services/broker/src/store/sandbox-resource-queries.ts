// The sandbox resource API's reads and writes (docs/sandboxes.md): sandboxes by id and
// by filters, always within an owner filter the caller's principal decides (an admin's
// is its tenant filter, or none), and the resource fields (name, template, metadata).
import type { Prisma, PrismaClient, Sandbox, SandboxState, ScopeType } from './generated/client.js';
import { guard } from './db-errors.js';
import { afterPosition, NEWEST_FIRST, pageOf, type Page, type PageRequest } from './admin-page.js';

/** Who may see what: one owner of one tenant, or (admin) one tenant or every tenant. */
export interface OwnerScope {
  readonly tenantId?: string | undefined;
  readonly ownerId?: string | undefined;
}

export interface SandboxResourceFilter {
  readonly state?: SandboxState | undefined;
  readonly scopeType?: ScopeType | undefined;
  readonly threadId?: string | undefined;
  readonly name?: string | undefined;
}

export interface ResourceFields {
  readonly name?: string | null | undefined;
  readonly template?: string | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

export class SandboxResourceQueries {
  constructor(private readonly prisma: PrismaClient) {}

  list(owner: OwnerScope, filter: SandboxResourceFilter, page: PageRequest): Promise<Page<Sandbox>> {
    return guard('list sandboxes', async () => {
      const rows = await this.prisma.sandbox.findMany({
        where: {
          AND: [
            {
              tenantId: owner.tenantId,
              ownerId: owner.ownerId,
              state: filter.state,
              scopeType: filter.scopeType,
              scopeId: filter.threadId,
              name: filter.name,
            },
            // thread_id is a thread's id: with scope_type too, both must hold (AND, as every filter).
            filter.threadId === undefined ? {} : { scopeType: 'thread' },
            afterPosition(page.after),
          ],
        },
        orderBy: NEWEST_FIRST,
        take: page.limit + 1,
      });
      return pageOf(rows, page.limit);
    });
  }

  /** The sandbox, when it exists within `owner`; null otherwise (another owner's is null too). */
  find(owner: OwnerScope, id: string): Promise<Sandbox | null> {
    return guard('find sandbox', () =>
      this.prisma.sandbox.findFirst({ where: { id, tenantId: owner.tenantId, ownerId: owner.ownerId } }),
    );
  }

  update(id: string, fields: ResourceFields): Promise<Sandbox> {
    const data: Prisma.SandboxUpdateInput = {
      ...(fields.name === undefined ? {} : { name: fields.name }),
      ...(fields.template === undefined ? {} : { template: fields.template }),
      ...(fields.metadata === undefined ? {} : { metadata: { ...fields.metadata } }),
    };
    return guard('update sandbox', () => this.prisma.sandbox.update({ where: { id }, data }));
  }
}
