// `GET /admin/invocations` and its export (docs/execute-code.md "Operators"): the
// sandbox_invocations rows of every tenant, filtered, newest first.
import { z } from 'zod';
import { AdminCursor, AdminLimit, adminPage } from './admin.js';
import { ADMIN_ERRORS } from './admin-config-routes.js';
import { AUDIT_EXPORT_FORMATS } from './admin-policy.js';
import { ExecuteCodeExitStatus } from './execute-code.js';
import { Id, Timestamp } from './primitives.js';
import type { RouteSpec } from './routes.js';

export const AdminInvocation = z.object({
  id: z.uuid(),
  created_at: Timestamp,
  tenant_id: Id,
  agent_id: Id,
  session_id: Id.nullable(),
  sandbox_id: Id.nullable(),
  scope: z.object({ type: z.string(), id: z.string() }).nullable(),
  language: z.string(),
  executed_code_hash: z.string().describe('SHA-256 of the code, hex'),
  stdout_bytes: z.number().int().nonnegative().describe('Before truncation'),
  stderr_bytes: z.number().int().nonnegative().describe('Before truncation'),
  stdout_truncated: z.boolean(),
  stderr_truncated: z.boolean(),
  exit_status: ExecuteCodeExitStatus,
  failure_reason: z.string().nullable(),
  duration_ms: z.number().int().nonnegative(),
  purge_after: Timestamp,
});
export type AdminInvocation = z.infer<typeof AdminInvocation>;

const FILTERS = {
  tenant_id: Id.optional(),
  agent_id: Id.optional(),
  sandbox_id: Id.optional(),
  exit_status: ExecuteCodeExitStatus.optional(),
  since: Timestamp.optional(),
  until: Timestamp.optional(),
};

export const InvocationQuery = z.strictObject({
  ...FILTERS,
  cursor: AdminCursor.optional(),
  limit: AdminLimit,
});
export type InvocationQuery = z.infer<typeof InvocationQuery>;

export const InvocationExportQuery = z.strictObject({
  ...FILTERS,
  format: z.enum(AUDIT_EXPORT_FORMATS),
  limit: z.coerce.number().int().min(1).max(1_000_000).default(100_000),
});
export type InvocationExportQuery = z.infer<typeof InvocationExportQuery>;

export const InvocationPage = adminPage(AdminInvocation);
export type InvocationPage = z.infer<typeof InvocationPage>;

const NoParams = z.strictObject({});

export const ADMIN_INVOCATION_ROUTES = {
  adminInvocations: {
    method: 'GET',
    path: '/admin/invocations',
    summary: 'execute_code invocations of every tenant, filtered, newest first, cursor-paginated',
    params: NoParams,
    query: InvocationQuery,
    response: InvocationPage,
    errors: ADMIN_ERRORS,
  },
  adminInvocationsExport: {
    method: 'GET',
    path: '/admin/invocations/export',
    summary: 'The invocation selection streamed as JSON lines (one AdminInvocation a line) or CSV',
    params: NoParams,
    query: InvocationExportQuery,
    produces: ['application/x-ndjson', 'text/csv'],
    errors: ADMIN_ERRORS,
  },
} as const satisfies Record<string, RouteSpec>;
