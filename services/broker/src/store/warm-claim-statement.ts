// A warm claim as one statement (docs/warm-pools.md): the DELETE of the warm row, the
// INSERT of the sandbox and the INSERT of its creator's binding are data-modifying CTEs of
// a single query, so a claim is one round trip and one commit, atomic as a transaction
// is: when the scope's unique index refuses the sandbox, nothing of the statement
// happens and the warm row stays in the pool. The tenant's running-sandbox limits are
// checked in the same statement (a claim over them takes nothing; the cold path then
// refuses with the limit's own error). The column maps are typed against the
// Prisma models, so a column added to either model fails to compile until it is read
// back here too.
import { Prisma } from './generated/client.js';
import type { SandboxRecord } from './sandbox-repository.js';
import type { NewSessionBinding, SessionBindingRecord } from './session-binding-repository.js';
import { RUNNING_STATES } from './sandbox-states.js';
import type { ClaimedSandbox, ClaimRoom, WarmKind, WarmSandboxRecord } from './warm-pool-repository.js';

type ColumnMap<T> = { readonly [K in keyof T]-?: string };

const SANDBOX_COLUMNS: ColumnMap<SandboxRecord> = {
  id: 'id',
  tenantId: 'tenant_id',
  ownerId: 'owner_id',
  scopeType: 'scope_type::text',
  scopeId: 'scope_id',
  live: 'live',
  provider: 'provider',
  providerRef: 'provider_ref',
  state: 'state::text',
  environment: 'environment::text',
  httpBaseUrl: 'http_base_url',
  wsBaseUrl: 'ws_base_url',
  workspacePath: 'workspace_path',
  hostInstance: 'host_instance',
  name: 'name',
  template: 'template',
  metadata: 'metadata',
  signingKeyCipher: 'signing_key_cipher',
  createdAt: 'created_at',
  activeAt: 'active_at',
  idleAt: 'idle_at',
  suspendedAt: 'suspended_at',
  terminatedAt: 'terminated_at',
  failedAt: 'failed_at',
  failureReason: 'failure_reason',
  lastHeartbeatAt: 'last_heartbeat_at',
  leaseExpiresAt: 'lease_expires_at',
  hardExpiresAt: 'hard_expires_at',
};

const BINDING_COLUMNS: ColumnMap<SessionBindingRecord> = {
  id: 'id',
  sandboxId: 'sandbox_id',
  tenantId: 'tenant_id',
  ownerId: 'owner_id',
  scopeType: 'scope_type::text',
  scopeId: 'scope_id',
  actorType: 'actor_type::text',
  actorId: 'actor_id',
  clientId: 'client_id',
  capabilities: 'capabilities',
  live: 'live',
  createdAt: 'created_at',
  releasedAt: 'released_at',
  lastHeartbeatAt: 'last_heartbeat_at',
};

const WARM_COLUMNS: ColumnMap<WarmSandboxRecord> = {
  id: 'id',
  provider: 'provider',
  template: 'template',
  environment: 'environment::text',
  hostInstance: 'host_instance',
  providerRef: 'provider_ref',
  httpBaseUrl: 'http_base_url',
  wsBaseUrl: 'ws_base_url',
  workspacePath: 'workspace_path',
  signingKeyCipher: 'signing_key_cipher',
  createdAt: 'created_at',
};

/** `alias.column AS "record.field", …` for every field of one record. */
function selectList(alias: string, record: string, columns: Readonly<Record<string, string>>): string {
  return Object.entries(columns)
    .map(([field, column]) => `${alias}.${column} AS "${record}.${field}"`)
    .join(', ');
}

const RESULT_COLUMNS = Prisma.raw(
  [
    selectList('w', 'warm', WARM_COLUMNS),
    selectList('s', 'sandbox', SANDBOX_COLUMNS),
    selectList('b', 'binding', BINDING_COLUMNS),
  ].join(', '),
);

export interface ClaimRows {
  readonly warm: WarmSandboxRecord;
  readonly sandbox: SandboxRecord;
  readonly binding: SessionBindingRecord;
}

/** True while the tenant (and the owner, when it has a limit) runs fewer sandboxes than it may. */
function roomLeft(sandbox: ClaimedSandbox, room: ClaimRoom): Prisma.Sql {
  const running = (owner: Prisma.Sql) => Prisma.sql`(
    SELECT count(*) FROM sandboxes WHERE tenant_id = ${sandbox.tenantId} ${owner} AND live
      AND state::text IN (${Prisma.join([...RUNNING_STATES])}))`;
  const tenant = Prisma.sql`${running(Prisma.empty)} < ${room.maxSandboxes}`;
  // A per-owner limit at or above the tenant's adds nothing (as in sandbox-quota.ts).
  return room.maxSandboxesPerOwner === null || room.maxSandboxesPerOwner >= room.maxSandboxes
    ? tenant
    : Prisma.sql`${tenant} AND ${running(Prisma.sql`AND owner_id = ${sandbox.ownerId}`)} < ${room.maxSandboxesPerOwner}`;
}

export function claimStatement(
  kind: WarmKind,
  sandbox: ClaimedSandbox,
  binding: Omit<NewSessionBinding, 'sandboxId'>,
  room: ClaimRoom,
): Prisma.Sql {
  return Prisma.sql`
    WITH w AS (
      DELETE FROM warm_sandboxes WHERE id = (
        SELECT id FROM warm_sandboxes
        WHERE host_instance = ${kind.hostInstance} AND provider = ${kind.provider}
          AND template = ${kind.template} AND environment = ${kind.environment}::"NetworkEnvironment"
        ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1)
      AND ${roomLeft(sandbox, room)}
      RETURNING *),
    s AS (
      INSERT INTO sandboxes (id, tenant_id, owner_id, scope_type, scope_id, provider, provider_ref,
        state, environment, http_base_url, ws_base_url, workspace_path, host_instance, template,
        signing_key_cipher, active_at, lease_expires_at, hard_expires_at)
      SELECT w.id, ${sandbox.tenantId}, ${sandbox.ownerId}, ${sandbox.scopeType}::"ScopeType",
        ${sandbox.scopeId}, w.provider, w.provider_ref, 'active', w.environment, w.http_base_url,
        w.ws_base_url, w.workspace_path, w.host_instance, w.template, w.signing_key_cipher,
        ${sandbox.activeAt}, ${sandbox.leaseExpiresAt}, ${sandbox.hardExpiresAt}
      FROM w
      RETURNING *),
    b AS (
      INSERT INTO session_bindings (id, sandbox_id, tenant_id, owner_id, scope_type, scope_id,
        actor_type, actor_id, client_id, capabilities)
      SELECT ${binding.id}, s.id, ${binding.tenantId}, ${binding.ownerId},
        ${binding.scopeType}::"ScopeType", ${binding.scopeId}, ${binding.actorType}::"ActorType",
        ${binding.actorId}, ${binding.clientId ?? null}, ${[...binding.capabilities]}::text[]
      FROM s
      RETURNING *)
    SELECT ${RESULT_COLUMNS} FROM w, s, b`;
}

/** Splits the statement's one row into its three records. */
export function claimRows(row: Readonly<Record<string, unknown>>): ClaimRows {
  const parts: Record<string, Record<string, unknown>> = { warm: {}, sandbox: {}, binding: {} };
  for (const [key, value] of Object.entries(row)) {
    const dot = key.indexOf('.');
    const part = parts[key.slice(0, dot)];
    if (part !== undefined) part[key.slice(dot + 1)] = value;
  }
  // oxlint-disable-next-line typescript/no-unsafe-type-assertion -- the statement selects every field of the three column maps, typed against the models (warm-pool-repository.test.ts compares the records with Prisma's own reads)
  return parts as unknown as ClaimRows;
}
