// The audit selection streamed page by page (JSON lines or CSV), so an export
// of a million rows holds one page in memory, not the whole answer. The walk
// is the audit query's own (id descending), so it sees what paging would see.
import type { AdminAuditEvent, AuditExportQuery } from '@sbx/protocol';
import type { AdminAuditFilter, AdminAuditQueries } from '../../store/admin-audit-queries.js';
import { toAuditEvent } from './admin-presenter.js';

/** Rows read per database round trip. */
export const EXPORT_PAGE = 500;

export const EXPORT_CONTENT_TYPES = {
  jsonl: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
} as const;

const COLUMNS = [
  'id',
  'at',
  'request_id',
  'action',
  'outcome',
  'tenant_id',
  'caller_id',
  'caller_type',
  'actor_type',
  'actor_id',
  'client_id',
  'scope_type',
  'scope_id',
  'session_id',
  'sandbox_id',
  'jti',
  'scopes',
  'detail',
] as const satisfies readonly (keyof AdminAuditEvent)[];

/**
 * One CSV field (RFC 4180 quoting). A value a spreadsheet would run as a formula
 * (`=`, `+`, `-`, `@` first) gets a leading `'`: audit fields carry caller input.
 */
export function csvField(value: unknown): string {
  const text =
    value === null || value === undefined
      ? ''
      : typeof value === 'string'
        ? value
        : Array.isArray(value)
          ? value.join(' ')
          : JSON.stringify(value);
  const safe = /^[=+\-@]/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

function line(format: AuditExportQuery['format'], event: AdminAuditEvent): string {
  if (format === 'jsonl') return `${JSON.stringify(event)}\n`;
  return `${COLUMNS.map((column) => csvField(event[column])).join(',')}\r\n`;
}

const date = (value: string | undefined): Date | undefined =>
  value === undefined ? undefined : new Date(value);

export function exportFilter(query: AuditExportQuery): AdminAuditFilter {
  return {
    tenantId: query.tenant_id,
    action: query.action,
    outcome: query.outcome,
    callerId: query.caller_id,
    sandboxId: query.sandbox_id,
    sessionId: query.session_id,
    since: date(query.since),
    until: date(query.until),
  };
}

/** Where the lines go; `write` resolves once the consumer can take more (back-pressure). */
export interface ExportSink {
  write(chunk: string): Promise<void>;
  /** True once the client has gone: the walk stops. */
  readonly closed: boolean;
}

/** Writes the selection to `sink`; returns the number of rows written. */
export async function exportAudit(
  queries: Pick<AdminAuditQueries, 'list'>,
  query: AuditExportQuery,
  sink: ExportSink,
): Promise<number> {
  const filter = exportFilter(query);
  if (query.format === 'csv') await sink.write(`${COLUMNS.join(',')}\r\n`);
  let written = 0;
  let beforeId: bigint | undefined;
  while (written < query.limit && !sink.closed) {
    const limit = Math.min(EXPORT_PAGE, query.limit - written);
    const page = await queries.list(filter, { beforeId, limit });
    const text = page.items.map((row) => line(query.format, toAuditEvent(row))).join('');
    if (text !== '') await sink.write(text);
    written += page.items.length;
    if (page.nextBeforeId === undefined) break;
    beforeId = page.nextBeforeId;
  }
  return written;
}
