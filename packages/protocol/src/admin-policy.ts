// Wire schemas of the admin API's policies, API keys and audit query (docs/admin.md).
import { z } from 'zod';
import { AdminAuditEvent, AdminCursor, AdminLimit, adminPage, NetworkEnvironment } from './admin.js';
import { Id, Timestamp } from './primitives.js';
import { CALLER_SCOPES, CallerScope, CapabilityInput, CapabilityScope, canonicalScopes } from './scopes.js';

export const TenantPathParams = z.strictObject({ tenant_id: Id });
export const ClientPathParams = z.strictObject({ client_id: Id });

const Count = z.number().int().positive().max(1_000_000);
const Seconds = z
  .number()
  .int()
  .positive()
  .max(365 * 86_400);

const TENANT_FIELDS = {
  sandbox_enabled: z.boolean(),
  environment: NetworkEnvironment,
  max_sandboxes: Count,
  /**
   * Running sandboxes per owner inside the tenant. null: the default share, half of
   * `max_sandboxes` rounded up; a value at or above `max_sandboxes`: no per-owner cap.
   */
  max_sandboxes_per_owner: Count.nullable(),
  idle_timeout_seconds: Seconds,
  hard_ttl_seconds: Seconds,
  max_token_ttl_seconds: Seconds,
  /** The most any token of the tenant may carry; empty: no cap. */
  allowed_capabilities: z.array(CapabilityInput).max(32).transform(canonicalScopes),
  max_processes: Count,
  max_memory_mb: Count,
  cpu_millicores: Count,
  max_file_size_mb: Count,
  max_disk_mb: Count,
  /** execute_code calls per UTC day for the tenant; 0 is a kill switch (docs/execute-code.md). */
  execute_code_daily_cap: z.number().int().min(0).max(100_000_000),
  /** execute_code calls per UTC hour for one agent of the tenant; 0 is a kill switch. */
  execute_code_agent_hourly_cap: z.number().int().min(0).max(100_000_000),
  /** Days sandbox_invocations rows are kept; the database refuses more than 180. */
  invocation_retention_days: z.number().int().min(1).max(180),
};

export const TenantPolicy = z.object({
  tenant_id: Id,
  ...TENANT_FIELDS,
  allowed_capabilities: z.array(CapabilityScope),
  /** null: the tenant has no stored policy and these are the defaults. */
  updated_at: Timestamp.nullable(),
});
export type TenantPolicy = z.infer<typeof TenantPolicy>;

/** A PUT sets the fields it names; the others keep their stored (or default) value. */
export const TenantPolicyUpdate = z.strictObject(TENANT_FIELDS).partial();
export type TenantPolicyUpdate = z.infer<typeof TenantPolicyUpdate>;

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, { message: 'is not an environment name' });

const CLIENT_FIELDS = {
  sidecar_image: z.string().min(1).max(500).nullable(),
  sidecar_audience: z.string().min(1).max(500).nullable(),
  sidecar_scopes: z.array(z.string().min(1).max(200)).max(64),
  sandbox_env: z.record(EnvName, z.string().max(4096)),
  /** Empty: no cap (docs/sessions.md, "Capabilities"). */
  max_capabilities: z.array(CapabilityInput).max(32).transform(canonicalScopes),
};

export const ClientPolicy = z.object({
  client_id: Id,
  ...CLIENT_FIELDS,
  max_capabilities: z.array(CapabilityScope),
  updated_at: Timestamp.nullable(),
});
export type ClientPolicy = z.infer<typeof ClientPolicy>;

export const ClientPolicyUpdate = z.strictObject(CLIENT_FIELDS).partial();
export type ClientPolicyUpdate = z.infer<typeof ClientPolicyUpdate>;

export const API_KEY_PRINCIPAL_TYPES = ['user', 'service', 'agent'] as const;
export const ApiKeyPrincipalType = z.enum(API_KEY_PRINCIPAL_TYPES);

export const CreateApiKeyRequest = z.strictObject({
  tenant_id: Id,
  principal_id: Id,
  principal_type: ApiKeyPrincipalType,
  /** Only scopes the caller holds; another tenant or principal needs admin:keys (docs/admin.md). */
  scopes: z
    .array(CallerScope)
    .min(1, { message: 'must name at least one caller scope' })
    .max(CALLER_SCOPES.length)
    .transform((scopes) => [...new Set(scopes)]),
  name: z.string().min(1).max(100).optional(),
  /** Must be in the future; absent: the key never expires. */
  expires_at: Timestamp.optional(),
});
export type CreateApiKeyRequest = z.infer<typeof CreateApiKeyRequest>;

/** A stored key as listings show it: never its secret. */
export const ApiKeyView = z.object({
  id: z.string(),
  tenant_id: z.string(),
  principal_id: z.string(),
  principal_type: ApiKeyPrincipalType,
  scopes: z.array(z.string()),
  name: z.string().nullable(),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
  expires_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
});
export type ApiKeyView = z.infer<typeof ApiKeyView>;

/** The one answer that carries the key itself. */
export const CreatedApiKeyResponse = ApiKeyView.extend({ key: z.string() });
export type CreatedApiKeyResponse = z.infer<typeof CreatedApiKeyResponse>;

export const ApiKeyQuery = z.strictObject({
  tenant_id: Id.optional(),
  principal_id: Id.optional(),
  include_revoked: z.enum(['true', 'false']).optional(),
  cursor: AdminCursor.optional(),
  limit: AdminLimit,
});
export type ApiKeyQuery = z.infer<typeof ApiKeyQuery>;
export const ApiKeyPage = adminPage(ApiKeyView);

export const AuditQuery = z.strictObject({
  tenant_id: Id.optional(),
  action: z
    .string()
    .regex(/^[a-z_.]{1,100}$/, { message: 'is not an audit action' })
    .optional(),
  outcome: z
    .string()
    .regex(/^[A-Za-z_]{1,50}$/, { message: 'is not an outcome' })
    .optional(),
  caller_id: Id.optional(),
  sandbox_id: Id.optional(),
  session_id: Id.optional(),
  since: Timestamp.optional(),
  until: Timestamp.optional(),
  cursor: AdminCursor.optional(),
  limit: AdminLimit,
});
export type AuditQuery = z.infer<typeof AuditQuery>;

export const AUDIT_EXPORT_FORMATS = ['jsonl', 'csv'] as const;

/** The audit query's filters; the whole selection streamed, newest first, up to `limit` rows. */
export const AuditExportQuery = z.strictObject({
  ...AuditQuery.omit({ cursor: true, limit: true }).shape,
  format: z.enum(AUDIT_EXPORT_FORMATS),
  limit: z.coerce.number().int().min(1).max(1_000_000).default(100_000),
});
export type AuditExportQuery = z.infer<typeof AuditExportQuery>;
export const AuditPage = adminPage(AdminAuditEvent);
