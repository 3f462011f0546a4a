// The usage report as CSV (RFC 4180): a header, then one line per tenant and day.
// An empty field would be a null; every column is a number today. Written through the audit
// export's sink, in chunks, so a long report honours back-pressure.
import type { UsageRow } from '@sbx/protocol';
import type { ExportSink } from './audit-export.js';

export const USAGE_CSV_COLUMNS = [
  'tenant_id',
  'day',
  'sandbox_seconds_active',
  'sandbox_seconds_idle',
  'sandbox_seconds_suspended',
  'sandbox_seconds_provisioning',
  'sessions',
  'tokens_minted',
  'commands_run',
  'file_bytes_in',
  'file_bytes_out',
  'execute_code_calls',
] as const;

/** Lines per write. */
const CHUNK = 500;

/** A tenant id is caller-chosen text: quoted as needed, and kept from running as a formula. */
function text(value: string): string {
  const safe = /^[=+\-@]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

const num = (value: number | null): string => (value === null ? '' : String(value));

export function usageCsvLine(row: UsageRow): string {
  const s = row.sandbox_seconds;
  return `${[
    text(row.tenant_id),
    row.day,
    num(s.active),
    num(s.idle),
    num(s.suspended),
    num(s.provisioning),
    num(row.sessions),
    num(row.tokens_minted),
    num(row.commands_run),
    num(row.file_bytes_in),
    num(row.file_bytes_out),
    num(row.execute_code_calls),
  ].join(',')}\r\n`;
}

export async function writeUsageCsv(rows: readonly UsageRow[], sink: ExportSink): Promise<void> {
  await sink.write(`${USAGE_CSV_COLUMNS.join(',')}\r\n`);
  for (let i = 0; i < rows.length && !sink.closed; i += CHUNK)
    await sink.write(
      rows
        .slice(i, i + CHUNK)
        .map(usageCsvLine)
        .join(''),
    );
}
