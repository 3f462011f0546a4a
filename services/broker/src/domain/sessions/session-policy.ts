// The policy a negotiation runs under: the tenant's stored policy, or for a
// tenant without one the broker's configured defaults; and the token lifetime
// arithmetic (clamping and the refresh margin).
import type { CapabilityScope } from '@sbx/protocol';
import type { SandboxLimits } from '../../providers/sandbox-limits.js';
import type { NetworkEnvironment, TenantPolicyRecord } from '../../store/index.js';
import { capabilityCeiling } from '../auth/client-policy.js';

export interface TenantPolicySource {
  getTenantPolicy(tenantId: string): Promise<TenantPolicyRecord>;
}

export interface PolicyDefaults {
  readonly idleTimeoutSeconds: number;
  readonly hardTtlSeconds: number;
  /** The configured default token lifetime; a tenant without a policy may be issued tokens this long. */
  readonly defaultTokenTtlSeconds: number;
}

export interface EffectivePolicy {
  readonly sandboxEnabled: boolean;
  readonly maxSandboxes: number;
  /**
   * The running sandboxes one owner may have: the stored value, or the default share
   * (`defaultOwnerShare`) when the tenant sets none. At or above `maxSandboxes` it adds nothing.
   */
  readonly maxSandboxesPerOwner: number;
  readonly idleTimeoutSeconds: number;
  readonly hardTtlSeconds: number;
  readonly maxTokenTtlSeconds: number;
  readonly environment: NetworkEnvironment;
  /** The most any token of the tenant may carry (every capability when the tenant sets none). */
  readonly allowedCapabilities: readonly CapabilityScope[];
  /** What each of the tenant's sandboxes may use. */
  readonly limits: SandboxLimits;
}

export async function effectivePolicy(
  source: TenantPolicySource,
  tenantId: string,
  defaults: PolicyDefaults,
): Promise<EffectivePolicy> {
  const stored = await source.getTenantPolicy(tenantId);
  // `updatedAt: null` means no row: the store's built-in defaults, which the broker's configuration overrides.
  const configured = stored.updatedAt === null ? defaults : stored;
  return {
    sandboxEnabled: stored.sandboxEnabled,
    maxSandboxes: stored.maxSandboxes,
    maxSandboxesPerOwner: stored.maxSandboxesPerOwner ?? defaultOwnerShare(stored.maxSandboxes),
    idleTimeoutSeconds: configured.idleTimeoutSeconds,
    hardTtlSeconds: configured.hardTtlSeconds,
    maxTokenTtlSeconds:
      stored.updatedAt === null
        ? Math.max(stored.maxTokenTtlSeconds, defaults.defaultTokenTtlSeconds)
        : stored.maxTokenTtlSeconds,
    environment: stored.environment,
    allowedCapabilities: capabilityCeiling(stored.allowedCapabilities),
    limits: limitsOf(stored),
  };
}

/**
 * One owner's share of a tenant whose policy names no `max_sandboxes_per_owner`: half of
 * `max_sandboxes`, rounded up (10 -> 5, 3 -> 2, 1 -> 1), so with two owners or more no one
 * of them can lock the others out; an admin lifts it by setting the field (docs/security.md).
 */
export function defaultOwnerShare(maxSandboxes: number): number {
  return Math.max(1, Math.ceil(maxSandboxes / 2));
}

/** What each sandbox of a tenant with this stored policy may use. */
export function limitsOf(
  stored: Pick<
    TenantPolicyRecord,
    'maxProcesses' | 'maxMemoryMb' | 'cpuMillicores' | 'maxFileSizeMb' | 'maxDiskMb'
  >,
): SandboxLimits {
  return {
    maxProcesses: stored.maxProcesses,
    memoryBytes: stored.maxMemoryMb * MIB,
    cpuMillicores: stored.cpuMillicores,
    maxFileBytes: stored.maxFileSizeMb * MIB,
    diskBytes: stored.maxDiskMb * MIB,
  };
}

const MIB = 1024 * 1024;

/** The shortest token the broker issues. */
export const MIN_TOKEN_TTL_SECONDS = 60;

/** The requested lifetime (or the default) within [60 s, the tenant's maximum]. */
export function tokenLifetime(
  requested: number | undefined,
  defaultSeconds: number,
  maxSeconds: number,
): number {
  const upper = Math.max(MIN_TOKEN_TTL_SECONDS, maxSeconds);
  return Math.min(upper, Math.max(MIN_TOKEN_TTL_SECONDS, Math.floor(requested ?? defaultSeconds)));
}

/** When a client should refresh: a margin of max(60 s, 20 % of the lifetime) before expiry. */
export function refreshBefore(expiresAt: Date, ttlSeconds: number): Date {
  const marginSeconds = Math.max(60, Math.ceil(ttlSeconds * 0.2));
  return new Date(expiresAt.getTime() - Math.min(marginSeconds, ttlSeconds) * 1000);
}

/** The lease a heartbeat grants: the idle timeout from now, never past the hard expiry. */
export function leaseUntil(nowMs: number, idleTimeoutSeconds: number, hardExpiresAt: Date): Date {
  return new Date(Math.min(nowMs + idleTimeoutSeconds * 1000, hardExpiresAt.getTime()));
}
