// Stored rows to the admin API's wire shapes (packages/protocol/src/admin*.ts).
import {
  SANDBOX_STATES,
  toTimestamp,
  type AdminAuditEvent,
  type AdminSandboxAgent,
  type AdminSandbox,
  type AdminSession,
  type ApiKeyView,
  type SandboxState,
} from '@sbx/protocol';
import type { AgentReport } from '../../providers/provider.js';
import type { AdminSandboxRow } from '../../store/admin-inventory-queries.js';
import type { AdminApiKeyRow } from '../../store/admin-key-queries.js';
import type { AuditEvent, SessionBinding, TokenIssuance } from '../../store/generated/client.js';
import { STATE_STAMPS } from '../../store/sandbox-states.js';
import type { LifecycleTimers } from '../lifecycle/lifecycle-settings.js';
import { toWireEnvironment } from './policy-presenter.js';
import { deadlineOf } from './state-deadlines.js';

export const nullableTime = (date: Date | null): string | null => (date === null ? null : toTimestamp(date));

function enteredAt(row: AdminSandboxRow, state: SandboxState): Date | null {
  const stamp = STATE_STAMPS[state];
  return stamp === undefined ? row.createdAt : row[stamp];
}

export function toAdminSandbox(row: AdminSandboxRow, timers: LifecycleTimers): AdminSandbox {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    owner_id: row.ownerId,
    scope: { type: row.scopeType, id: row.scopeId },
    state: row.state,
    provider: row.provider,
    environment: toWireEnvironment(row.environment),
    live_bindings: row.liveBindings,
    created_at: toTimestamp(row.createdAt),
    state_entered_at: toTimestamp(enteredAt(row, row.state) ?? row.createdAt),
    last_heartbeat_at: toTimestamp(row.lastHeartbeatAt),
    lease_expires_at: toTimestamp(row.leaseExpiresAt),
    hard_expires_at: toTimestamp(row.hardExpiresAt),
    deadline: nullableTime(deadlineOf(row, timers)?.at ?? null),
    failure_reason: row.failureReason,
  };
}

/** Each state the sandbox has entered, oldest first (a state entered twice shows its last entry). */
export function stateHistory(row: AdminSandboxRow): { state: SandboxState; at: string }[] {
  const entries = SANDBOX_STATES.flatMap((state) => {
    const at = enteredAt(row, state);
    return at === null ? [] : [{ state, at }];
  });
  return entries
    .toSorted((a, b) => a.at.getTime() - b.at.getTime())
    .map((e) => ({ ...e, at: toTimestamp(e.at) }));
}

export function toAdminSession(row: SessionBinding): AdminSession {
  return {
    id: row.id,
    sandbox_id: row.sandboxId,
    tenant_id: row.tenantId,
    owner_id: row.ownerId,
    scope: { type: row.scopeType, id: row.scopeId },
    actor: { type: row.actorType, id: row.actorId },
    client_id: row.clientId,
    capabilities: row.capabilities,
    state: row.live === true ? 'live' : 'released',
    created_at: toTimestamp(row.createdAt),
    released_at: nullableTime(row.releasedAt),
    last_heartbeat_at: toTimestamp(row.lastHeartbeatAt),
  };
}

export function toTokenIssuance(row: TokenIssuance) {
  return {
    jti: row.jti,
    sub: row.subject,
    session_id: row.sessionId,
    scopes: row.scopes,
    issued_at: toTimestamp(row.issuedAt),
    expires_at: toTimestamp(row.expiresAt),
  };
}

export function toAuditEvent(row: AuditEvent): AdminAuditEvent {
  return {
    id: row.id.toString(),
    at: toTimestamp(row.at),
    request_id: row.requestId,
    action: row.action,
    outcome: row.outcome,
    tenant_id: row.tenantId,
    caller_id: row.callerId,
    caller_type: row.callerType,
    actor_type: row.actorType,
    actor_id: row.actorId,
    client_id: row.clientId,
    scope_type: row.scopeType,
    scope_id: row.scopeId,
    session_id: row.sessionId,
    sandbox_id: row.sandboxId,
    jti: row.jti,
    scopes: row.scopes,
    detail: row.detail,
  };
}

export function toApiKeyView(row: AdminApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    principal_id: row.principalId,
    principal_type: row.principalType,
    scopes: row.scopes,
    name: row.name,
    created_at: toTimestamp(row.createdAt),
    last_used_at: nullableTime(row.lastUsedAt),
    expires_at: nullableTime(row.expiresAt),
    revoked_at: nullableTime(row.revokedAt),
  };
}

/** The agent's answer to the detail's question, stamped with when the broker got it. */
export function toAdminAgent(report: AgentReport, reportedAt: Date): AdminSandboxAgent {
  return {
    reported_at: toTimestamp(reportedAt),
    processes: [...report.processes],
    shells: [...report.shells],
    usage: report.usage,
  };
}
