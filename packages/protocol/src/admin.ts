// Wire schemas of the operators' admin API, `/admin/*` (docs/admin.md): inventory
// of sandboxes and sessions across tenants and the two forced actions on a sandbox.
// Policies, API keys and the audit query are in admin-policy.ts.
import { z } from 'zod';
import { SandboxState } from './lifecycle.js';
import { Id, ProviderName, Timestamp } from './primitives.js';
import { ActorType, Scope, ScopeType } from './sessions.js';

/** Page size of every admin listing: 1..200, default 50. */
export const AdminLimit = z.coerce.number().int().min(1).max(200).default(50);

/** Opaque continuation token of a listing (the broker's encoding; a client only echoes it). */
export const AdminCursor = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[A-Za-z0-9_-]+$/, { message: 'is not a cursor this API returned' });

/** One page of a listing; `next_cursor` null on the last page. */
export function adminPage<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), next_cursor: AdminCursor.nullable() });
}

/** `/admin/sandboxes/{id}`, `/admin/api-keys/{id}`. */
export const AdminIdParams = z.strictObject({ id: Id });

/** Query string filters share the creation window: "age" is created_after/created_before. */
const CreatedWindow = {
  created_after: Timestamp.optional(),
  created_before: Timestamp.optional(),
  cursor: AdminCursor.optional(),
  limit: AdminLimit,
};

/** Unknown parameters are refused (400), so a misspelt filter never silently lists everything. */
export const AdminSandboxQuery = z.strictObject({
  tenant_id: Id.optional(),
  owner_id: Id.optional(),
  state: SandboxState.optional(),
  provider: ProviderName.optional(),
  thread_id: Id.optional(),
  ...CreatedWindow,
});
export type AdminSandboxQuery = z.infer<typeof AdminSandboxQuery>;

export const BINDING_STATES = ['live', 'released'] as const;
export const BindingState = z.enum(BINDING_STATES);

export const AdminSessionQuery = z.strictObject({
  tenant_id: Id.optional(),
  owner_id: Id.optional(),
  state: BindingState.optional(),
  sandbox_id: Id.optional(),
  thread_id: Id.optional(),
  actor_id: Id.optional(),
  ...CreatedWindow,
});
export type AdminSessionQuery = z.infer<typeof AdminSessionQuery>;

export const NETWORK_ENVIRONMENTS = ['default-public', 'internal-only'] as const;
export const NetworkEnvironment = z.enum(NETWORK_ENVIRONMENTS);
export type NetworkEnvironment = z.infer<typeof NetworkEnvironment>;

export const AdminSandbox = z.object({
  id: Id,
  tenant_id: Id,
  owner_id: Id,
  scope: z.object({ type: ScopeType, id: Id }),
  state: SandboxState,
  provider: z.string(),
  environment: NetworkEnvironment,
  live_bindings: z.number().int().nonnegative(),
  created_at: Timestamp,
  state_entered_at: Timestamp,
  last_heartbeat_at: Timestamp,
  lease_expires_at: Timestamp,
  hard_expires_at: Timestamp,
  /** When the lifecycle forces it out of its state (docs/admin.md, "Deadlines"); null when final. */
  deadline: Timestamp.nullable(),
  failure_reason: z.string().nullable(),
});
export type AdminSandbox = z.infer<typeof AdminSandbox>;

export const AdminSession = z.object({
  id: Id,
  sandbox_id: Id,
  tenant_id: Id,
  owner_id: Id,
  scope: Scope,
  actor: z.object({ type: ActorType, id: Id }),
  client_id: z.string().nullable(),
  capabilities: z.array(z.string()),
  state: BindingState,
  created_at: Timestamp,
  released_at: Timestamp.nullable(),
  last_heartbeat_at: Timestamp,
});
export type AdminSession = z.infer<typeof AdminSession>;

export const AdminTokenIssuance = z.object({
  jti: z.string(),
  sub: z.string(),
  session_id: z.string().nullable(),
  scopes: z.array(z.string()),
  issued_at: Timestamp,
  expires_at: Timestamp,
});

/** A state the sandbox entered, from its per-state timestamps (the audit has every change). */
export const AdminStateEntry = z.object({ state: SandboxState, at: Timestamp });

export const AdminAuditEvent = z.object({
  id: z.string(),
  at: Timestamp,
  request_id: z.string().nullable(),
  action: z.string(),
  outcome: z.string(),
  tenant_id: z.string().nullable(),
  caller_id: z.string().nullable(),
  caller_type: z.string().nullable(),
  actor_type: z.string().nullable(),
  actor_id: z.string().nullable(),
  client_id: z.string().nullable(),
  scope_type: z.string().nullable(),
  scope_id: z.string().nullable(),
  session_id: z.string().nullable(),
  sandbox_id: z.string().nullable(),
  jti: z.string().nullable(),
  scopes: z.array(z.string()),
  detail: z.unknown(),
});
export type AdminAuditEvent = z.infer<typeof AdminAuditEvent>;

const AgentCount = z.number().int().nonnegative();

/** The agent's counters since it started (its `boot_id`): they restart at 0 with the agent. */
export const AgentUsage = z.object({
  commands_run: AgentCount,
  file_bytes_in: AgentCount,
  file_bytes_out: AgentCount,
});
export type AgentUsage = z.infer<typeof AgentUsage>;

/** A background process, or a one-shot exec still running; `command` cut to 200 characters. */
export const AgentProcess = z.object({
  id: z.string(),
  command: z.string(),
  started_at: Timestamp,
  running: z.boolean(),
});
export type AgentProcess = z.infer<typeof AgentProcess>;

export const AgentShell = z.object({ id: z.string(), opened_at: Timestamp });
export type AgentShell = z.infer<typeof AgentShell>;

/** What the sandbox's agent reported when asked for the detail (its authenticated `/healthz`). */
export const AdminSandboxAgent = z.object({
  reported_at: Timestamp,
  processes: z.array(AgentProcess),
  shells: z.array(AgentShell),
  usage: AgentUsage,
});
export type AdminSandboxAgent = z.infer<typeof AdminSandboxAgent>;

export const AdminSandboxDetail = AdminSandbox.extend({
  bindings: z.array(AdminSession),
  state_history: z.array(AdminStateEntry),
  tokens: z.array(AdminTokenIssuance),
  recent_audit: z.array(AdminAuditEvent),
  /** null: the sandbox is not running, or its agent did not answer within ~2 s. */
  agent: AdminSandboxAgent.nullable(),
});
export type AdminSandboxDetail = z.infer<typeof AdminSandboxDetail>;

export const AdminSandboxPage = adminPage(AdminSandbox);
export const AdminSessionPage = adminPage(AdminSession);

/** Terminate and recover: an optional note kept in the audit row. */
export const AdminActionRequest = z.strictObject({ reason: z.string().max(500).optional() });

export const AdminActionResponse = z.object({
  from: SandboxState,
  to: SandboxState,
  sandbox: AdminSandbox,
});
export type AdminActionResponse = z.infer<typeof AdminActionResponse>;
