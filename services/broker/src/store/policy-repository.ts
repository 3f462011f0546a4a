// Tenant and client policies. A tenant or client without a row gets the
// defaults below, which are the column defaults of the schema (a test keeps the
// two in step), so "no row" and "a row nobody edited" mean the same thing.
import type {
  ClientPolicy,
  NetworkEnvironment,
  Prisma,
  PrismaClient,
  TenantPolicy,
} from './generated/client.js';
import { guard } from './db-errors.js';
import { TtlCache } from './ttl-cache.js';

export interface TenantPolicyRecord extends Omit<TenantPolicy, 'updatedAt'> {
  /** null when the tenant has no stored policy and these are the defaults. */
  readonly updatedAt: Date | null;
}

export interface ClientPolicyRecord extends Omit<ClientPolicy, 'updatedAt' | 'sandboxEnv'> {
  readonly sandboxEnv: Record<string, string>;
  /** null when the client has no stored policy and these are the defaults. */
  readonly updatedAt: Date | null;
}

export type TenantPolicyPatch = Partial<Omit<TenantPolicy, 'tenantId' | 'updatedAt'>>;
export type ClientPolicyPatch = Partial<Omit<ClientPolicyRecord, 'clientId' | 'updatedAt'>>;

export const DEFAULT_TENANT_POLICY: Readonly<Omit<TenantPolicyRecord, 'tenantId' | 'updatedAt'>> =
  Object.freeze({
    environment: 'default_public' satisfies NetworkEnvironment,
    sandboxEnabled: true,
    maxSandboxes: 10,
    maxSandboxesPerOwner: null,
    idleTimeoutSeconds: 900,
    hardTtlSeconds: 28800,
    maxTokenTtlSeconds: 900,
    allowedCapabilities: [],
    maxProcesses: 256,
    maxMemoryMb: 2048,
    cpuMillicores: 1000,
    maxFileSizeMb: 1024,
    maxDiskMb: 10240,
    executeCodeDailyCap: 1000,
    executeCodeAgentHourlyCap: 100,
    invocationRetentionDays: 30,
  });

export const DEFAULT_CLIENT_POLICY: Readonly<Omit<ClientPolicyRecord, 'clientId' | 'updatedAt'>> =
  Object.freeze({
    sidecarImage: null,
    sidecarAudience: null,
    sidecarScopes: [],
    sandboxEnv: {},
    maxCapabilities: [],
  });

function clientRecord(row: ClientPolicy): ClientPolicyRecord {
  return { ...row, sandboxEnv: toEnv(row.sandboxEnv) };
}

/** Keeps the string-valued entries of a JSON object; anything else is not an environment. */
function toEnv(value: Prisma.JsonValue): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const env: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) if (typeof entry === 'string') env[key] = entry;
  return env;
}

/** How long a policy read is reused by this process; writes through it take effect at once. */
export const POLICY_CACHE_MS = 5_000;

export class PolicyRepository {
  readonly #tenants: TtlCache<TenantPolicyRecord>;
  readonly #clients: TtlCache<ClientPolicyRecord>;

  constructor(
    private readonly prisma: PrismaClient,
    cacheMs = POLICY_CACHE_MS,
  ) {
    this.#tenants = new TtlCache(cacheMs);
    this.#clients = new TtlCache(cacheMs);
  }

  getTenantPolicy(tenantId: string): Promise<TenantPolicyRecord> {
    return this.#tenants.get(tenantId, async () => {
      const row = await guard('read tenant policy', () =>
        this.prisma.tenantPolicy.findUnique({ where: { tenantId } }),
      );
      return row ?? { tenantId, ...DEFAULT_TENANT_POLICY, updatedAt: null };
    });
  }

  /**
   * Creates or updates; fields left out (or undefined, which Prisma skips) keep
   * their stored (or default) value.
   */
  async upsertTenantPolicy(tenantId: string, patch: TenantPolicyPatch): Promise<TenantPolicyRecord> {
    this.#tenants.delete(tenantId);
    const row = await guard('write tenant policy', () =>
      this.prisma.tenantPolicy.upsert({ where: { tenantId }, create: { tenantId, ...patch }, update: patch }),
    );
    this.#tenants.delete(tenantId);
    return row;
  }

  getClientPolicy(clientId: string): Promise<ClientPolicyRecord> {
    return this.#clients.get(clientId, async () => {
      const row = await guard('read client policy', () =>
        this.prisma.clientPolicy.findUnique({ where: { clientId } }),
      );
      return row === null ? { clientId, ...DEFAULT_CLIENT_POLICY, updatedAt: null } : clientRecord(row);
    });
  }

  /** Creates or updates; fields left out (or undefined) keep their stored (or default) value. */
  async upsertClientPolicy(clientId: string, patch: ClientPolicyPatch): Promise<ClientPolicyRecord> {
    const { sidecarScopes, maxCapabilities, ...rest } = patch;
    const data = {
      ...rest,
      ...(sidecarScopes === undefined ? {} : { sidecarScopes: [...sidecarScopes] }),
      ...(maxCapabilities === undefined ? {} : { maxCapabilities: [...maxCapabilities] }),
    };
    this.#clients.delete(clientId);
    const row = await guard('write client policy', () =>
      this.prisma.clientPolicy.upsert({
        where: { clientId },
        // String[] columns have no default in Postgres: a new row starts empty.
        create: { clientId, sidecarScopes: [], maxCapabilities: [], ...data },
        update: data,
      }),
    );
    this.#clients.delete(clientId);
    return clientRecord(row);
  }
}
