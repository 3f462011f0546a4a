// Policies between the store's records and the admin API's wire shapes.
import {
  CapabilityScope,
  toTimestamp,
  type ClientPolicy,
  type ClientPolicyUpdate,
  type NetworkEnvironment,
  type TenantPolicy,
  type TenantPolicyUpdate,
} from '@sbx/protocol';
import type { NetworkEnvironment as StoredEnvironment } from '../../store/generated/client.js';
import type {
  ClientPolicyPatch,
  ClientPolicyRecord,
  TenantPolicyPatch,
  TenantPolicyRecord,
} from '../../store/policy-repository.js';

const nullableTime = (date: Date | null): string | null => (date === null ? null : toTimestamp(date));

/** The database spells the environments with `_` (enum identifiers), the wire with `-`. */
export const toWireEnvironment = (env: StoredEnvironment): NetworkEnvironment =>
  env === 'internal_only' ? 'internal-only' : 'default-public';
export const toStoredEnvironment = (env: NetworkEnvironment): StoredEnvironment =>
  env === 'internal-only' ? 'internal_only' : 'default_public';

/** A stored capability list as the wire names it; names no longer known are left out. */
function knownCapabilities(stored: readonly string[]): CapabilityScope[] {
  return stored.flatMap((name) => {
    const parsed = CapabilityScope.safeParse(name);
    return parsed.success ? [parsed.data] : [];
  });
}

export function toTenantPolicy(record: TenantPolicyRecord): TenantPolicy {
  return {
    tenant_id: record.tenantId,
    sandbox_enabled: record.sandboxEnabled,
    environment: toWireEnvironment(record.environment),
    max_sandboxes: record.maxSandboxes,
    max_sandboxes_per_owner: record.maxSandboxesPerOwner,
    idle_timeout_seconds: record.idleTimeoutSeconds,
    hard_ttl_seconds: record.hardTtlSeconds,
    max_token_ttl_seconds: record.maxTokenTtlSeconds,
    allowed_capabilities: knownCapabilities(record.allowedCapabilities),
    max_processes: record.maxProcesses,
    max_memory_mb: record.maxMemoryMb,
    cpu_millicores: record.cpuMillicores,
    max_file_size_mb: record.maxFileSizeMb,
    max_disk_mb: record.maxDiskMb,
    execute_code_daily_cap: record.executeCodeDailyCap,
    execute_code_agent_hourly_cap: record.executeCodeAgentHourlyCap,
    invocation_retention_days: record.invocationRetentionDays,
    updated_at: nullableTime(record.updatedAt),
  };
}

export function toClientPolicy(record: ClientPolicyRecord): ClientPolicy {
  return {
    client_id: record.clientId,
    sidecar_image: record.sidecarImage,
    sidecar_audience: record.sidecarAudience,
    sidecar_scopes: record.sidecarScopes,
    sandbox_env: record.sandboxEnv,
    max_capabilities: knownCapabilities(record.maxCapabilities),
    updated_at: nullableTime(record.updatedAt),
  };
}

/** Only the fields the PUT names: Prisma leaves undefined ones as stored. */
export function tenantPatch(update: TenantPolicyUpdate): TenantPolicyPatch {
  return {
    sandboxEnabled: update.sandbox_enabled,
    environment: update.environment === undefined ? undefined : toStoredEnvironment(update.environment),
    maxSandboxes: update.max_sandboxes,
    maxSandboxesPerOwner: update.max_sandboxes_per_owner,
    idleTimeoutSeconds: update.idle_timeout_seconds,
    hardTtlSeconds: update.hard_ttl_seconds,
    maxTokenTtlSeconds: update.max_token_ttl_seconds,
    allowedCapabilities: update.allowed_capabilities,
    maxProcesses: update.max_processes,
    maxMemoryMb: update.max_memory_mb,
    cpuMillicores: update.cpu_millicores,
    maxFileSizeMb: update.max_file_size_mb,
    maxDiskMb: update.max_disk_mb,
    executeCodeDailyCap: update.execute_code_daily_cap,
    executeCodeAgentHourlyCap: update.execute_code_agent_hourly_cap,
    invocationRetentionDays: update.invocation_retention_days,
  };
}

export function clientPatch(update: ClientPolicyUpdate): ClientPolicyPatch {
  return {
    sidecarImage: update.sidecar_image,
    sidecarAudience: update.sidecar_audience,
    sidecarScopes: update.sidecar_scopes,
    sandboxEnv: update.sandbox_env,
    maxCapabilities: update.max_capabilities,
  };
}
