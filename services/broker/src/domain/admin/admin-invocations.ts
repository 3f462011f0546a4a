// execute_code invocations for operators (docs/execute-code.md "Operators"): pages
// for `GET /admin/invocations` and the streamed export, newest first.
import {
  ExecuteCodeExitStatus,
  toTimestamp,
  type AdminInvocation,
  type InvocationExportQuery,
  type InvocationPage,
  type InvocationQuery,
} from '@sbx/protocol';
import type { InvocationFilter, InvocationRecord, InvocationRepository } from '../../store/index.js';
import { csvField, type ExportSink } from './audit-export.js';
import { decodePosition, encodePosition } from './admin-cursor.js';

const EXPORT_PAGE = 500;

export function toAdminInvocation(row: InvocationRecord): AdminInvocation {
  return {
    id: row.id,
    created_at: toTimestamp(row.createdAt),
    tenant_id: row.tenantId,
    agent_id: row.agentId,
    session_id: row.sessionId,
    sandbox_id: row.sandboxId,
    scope: row.scopeType === null || row.scopeId === null ? null : { type: row.scopeType, id: row.scopeId },
    language: row.language,
    executed_code_hash: row.executedCodeHash,
    stdout_bytes: Number(row.stdoutBytes),
    stderr_bytes: Number(row.stderrBytes),
    stdout_truncated: row.stdoutTruncated,
    stderr_truncated: row.stderrTruncated,
    exit_status: ExecuteCodeExitStatus.parse(row.exitStatus),
    failure_reason: row.failureReason,
    duration_ms: row.durationMs,
    purge_after: toTimestamp(row.purgeAfter),
  };
}

const date = (value: string | undefined): Date | undefined =>
  value === undefined ? undefined : new Date(value);

function filterOf(query: Omit<InvocationQuery, 'cursor' | 'limit'>): InvocationFilter {
  return {
    tenantId: query.tenant_id,
    agentId: query.agent_id,
    sandboxId: query.sandbox_id,
    exitStatus: query.exit_status,
    since: date(query.since),
    until: date(query.until),
  };
}

export async function invocationPage(
  repository: Pick<InvocationRepository, 'list'>,
  query: InvocationQuery,
): Promise<InvocationPage> {
  const rows = await repository.list(
    filterOf(query),
    query.limit + 1,
    decodePosition('invocations', query.cursor),
  );
  const items = rows.slice(0, query.limit);
  const last = items[items.length - 1];
  const more = rows.length > query.limit && last !== undefined;
  return {
    items: items.map(toAdminInvocation),
    next_cursor: more ? encodePosition('invocations', { createdAt: last.createdAt, id: last.id }) : null,
  };
}

const COLUMNS = [
  'id',
  'created_at',
  'tenant_id',
  'agent_id',
  'session_id',
  'sandbox_id',
  'scope',
  'language',
  'executed_code_hash',
  'stdout_bytes',
  'stderr_bytes',
  'stdout_truncated',
  'stderr_truncated',
  'exit_status',
  'failure_reason',
  'duration_ms',
  'purge_after',
] as const satisfies readonly (keyof AdminInvocation)[];

function line(format: InvocationExportQuery['format'], invocation: AdminInvocation): string {
  if (format === 'jsonl') return `${JSON.stringify(invocation)}\n`;
  return `${COLUMNS.map((column) => {
    const value = invocation[column];
    return csvField(value !== null && typeof value === 'object' ? `${value.type}:${value.id}` : value);
  }).join(',')}\r\n`;
}

/** Writes the selection page by page with back-pressure; returns the rows written. */
export async function exportInvocations(
  repository: Pick<InvocationRepository, 'list'>,
  query: InvocationExportQuery,
  sink: ExportSink,
): Promise<number> {
  const filter = filterOf(query);
  if (query.format === 'csv') await sink.write(`${COLUMNS.join(',')}\r\n`);
  let written = 0;
  let after: { createdAt: Date; id: string } | undefined;
  while (written < query.limit && !sink.closed) {
    const rows = await repository.list(filter, Math.min(EXPORT_PAGE, query.limit - written), after);
    if (rows.length > 0)
      await sink.write(rows.map((row) => line(query.format, toAdminInvocation(row))).join(''));
    written += rows.length;
    const last = rows[rows.length - 1];
    if (last === undefined || rows.length < EXPORT_PAGE) break;
    after = { createdAt: last.createdAt, id: last.id };
  }
  return written;
}
