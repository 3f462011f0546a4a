// The journal writer's one statement: three tables from three JSON arrays of rows,
// so the SQL text is the same for any batch (Prisma's generated createMany is
// compiled anew for every batch size, which cost more than the insert).
// Audit rows keep their order within a batch (WITH ORDINALITY), so ids follow it.
import { storableAuditEvent, type NewAuditEvent } from './audit-repository.js';
import type { NewInvocation } from './invocation-repository.js';
import type { NewTokenIssuance } from './token-issuance-repository.js';

export const WRITE_JOURNAL = `
WITH issued AS (
  INSERT INTO "token_issuances"
    ("jti", "sub", "aud", "scopes", "session_id", "thread_id", "request_id", "issued_at", "expires_at",
     "parent_jti", "token_hash")
  SELECT r.jti, r.sub, r.aud, r.scopes, r.session_id, r.thread_id, r.request_id,
         COALESCE(r.issued_at, CURRENT_TIMESTAMP), r.expires_at, r.parent_jti, r.token_hash
  FROM jsonb_to_recordset($1::jsonb) AS r(
    jti text, sub text, aud text, scopes text[], session_id text, thread_id text, request_id text,
    issued_at timestamptz, expires_at timestamptz, parent_jti text, token_hash text)
), invoked AS (
  INSERT INTO "sandbox_invocations"
    ("id", "created_at", "tenant_id", "agent_id", "session_id", "sandbox_id", "scope_type", "scope_id",
     "language", "executed_code_hash", "stdout_bytes", "stderr_bytes", "stdout_truncated",
     "stderr_truncated", "exit_status", "failure_reason", "duration_ms", "purge_after")
  SELECT r.id, r.created_at, r.tenant_id, r.agent_id, r.session_id, r.sandbox_id, r.scope_type,
         r.scope_id, r.language, r.executed_code_hash, r.stdout_bytes, r.stderr_bytes,
         r.stdout_truncated, r.stderr_truncated, r.exit_status, r.failure_reason, r.duration_ms,
         r.purge_after
  FROM jsonb_to_recordset($3::jsonb) AS r(
    id uuid, created_at timestamptz, tenant_id text, agent_id text, session_id text, sandbox_id text,
    scope_type text, scope_id text, language text, executed_code_hash text, stdout_bytes bigint,
    stderr_bytes bigint, stdout_truncated boolean, stderr_truncated boolean, exit_status text,
    failure_reason text, duration_ms int, purge_after timestamptz)
)
INSERT INTO "audit_events"
  ("at", "request_id", "action", "outcome", "tenant_id", "caller_id", "caller_type", "actor_type",
   "actor_id", "client_id", "scope_type", "scope_id", "session_id", "sandbox_id", "jti", "scopes", "detail")
SELECT COALESCE(r.at, CURRENT_TIMESTAMP), r.request_id, r.action, r.outcome, r.tenant_id, r.caller_id,
       r.caller_type, r.actor_type, r.actor_id, r.client_id, r.scope_type, r.scope_id, r.session_id,
       r.sandbox_id, r.jti, r.scopes, r.detail
FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS e(row, position),
     jsonb_to_record(e.row) AS r(
       at timestamptz, request_id text, action text, outcome text, tenant_id text, caller_id text,
       caller_type text, actor_type text, actor_id text, client_id text, scope_type text, scope_id text,
       session_id text, sandbox_id text, jti text, scopes text[], detail jsonb)
ORDER BY e.position`;

export function issuanceJson(input: NewTokenIssuance): Record<string, unknown> {
  return {
    jti: input.jti,
    sub: input.subject,
    aud: input.audience,
    scopes: input.scopes,
    session_id: input.sessionId ?? null,
    thread_id: input.threadId ?? null,
    request_id: input.requestId ?? null,
    issued_at: input.issuedAt?.toISOString() ?? null,
    expires_at: input.expiresAt.toISOString(),
    parent_jti: input.parentJti ?? null,
    token_hash: input.tokenHash ?? null,
  };
}

export function auditJson(given: NewAuditEvent): Record<string, unknown> {
  const event = storableAuditEvent(given);
  return {
    at: event.at?.toISOString() ?? null,
    request_id: event.requestId ?? null,
    action: event.action,
    outcome: event.outcome,
    tenant_id: event.tenantId ?? null,
    caller_id: event.callerId ?? null,
    caller_type: event.callerType ?? null,
    actor_type: event.actorType ?? null,
    actor_id: event.actorId ?? null,
    client_id: event.clientId ?? null,
    scope_type: event.scopeType ?? null,
    scope_id: event.scopeId ?? null,
    session_id: event.sessionId ?? null,
    sandbox_id: event.sandboxId ?? null,
    jti: event.jti ?? null,
    scopes: event.scopes ?? [],
    detail: event.detail ?? null,
  };
}

export function invocationJson(row: NewInvocation): Record<string, unknown> {
  return {
    id: row.id,
    created_at: row.createdAt.toISOString(),
    tenant_id: row.tenantId,
    agent_id: row.agentId,
    session_id: row.sessionId,
    sandbox_id: row.sandboxId,
    scope_type: row.scopeType,
    scope_id: row.scopeId,
    language: row.language,
    executed_code_hash: row.executedCodeHash,
    stdout_bytes: row.stdoutBytes,
    stderr_bytes: row.stderrBytes,
    stdout_truncated: row.stdoutTruncated,
    stderr_truncated: row.stderrTruncated,
    exit_status: row.exitStatus,
    failure_reason: row.failureReason,
    duration_ms: row.durationMs,
    purge_after: row.purgeAfter.toISOString(),
  };
}
