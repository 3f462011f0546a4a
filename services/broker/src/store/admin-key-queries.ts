// API keys as operators see them: every tenant's, never a hash. Creating one
// stays with ApiKeyRepository (it alone knows the key format).
import type { ApiKey, PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';
import { afterPosition, NEWEST_FIRST, pageOf, type Page, type PageRequest } from './admin-page.js';

export type AdminApiKeyRow = Omit<ApiKey, 'hash'>;

export interface AdminApiKeyFilter {
  readonly tenantId?: string | undefined;
  readonly principalId?: string | undefined;
  readonly includeRevoked: boolean;
}

/** Every column but the hash: a listing must not even carry it. */
const WITHOUT_HASH = {
  id: true,
  prefix: true,
  tenantId: true,
  principalId: true,
  principalType: true,
  scopes: true,
  name: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
  expiresAt: true,
} as const;

export class AdminKeyQueries {
  constructor(private readonly prisma: PrismaClient) {}

  list(filter: AdminApiKeyFilter, page: PageRequest): Promise<Page<AdminApiKeyRow>> {
    return guard('list api keys', async () => {
      const rows = await this.prisma.apiKey.findMany({
        where: {
          AND: [
            {
              tenantId: filter.tenantId,
              principalId: filter.principalId,
              ...(filter.includeRevoked ? {} : { revokedAt: null }),
            },
            afterPosition(page.after),
          ],
        },
        select: WITHOUT_HASH,
        orderBy: NEWEST_FIRST,
        take: page.limit + 1,
      });
      return pageOf(rows, page.limit);
    });
  }

  find(id: string): Promise<AdminApiKeyRow | null> {
    return guard('find api key', () =>
      this.prisma.apiKey.findUnique({ where: { id }, select: WITHOUT_HASH }),
    );
  }

  /** Revokes the key of any tenant; revoking again keeps the first time. Null: no such key. */
  async revoke(id: string, at: Date): Promise<AdminApiKeyRow | null> {
    await guard('revoke api key', () =>
      this.prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: at } }),
    );
    return this.find(id);
  }
}
