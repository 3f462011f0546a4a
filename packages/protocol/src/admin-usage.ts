// Wire schemas of `GET /admin/usage` (docs/admin.md, "Usage"): per tenant and UTC day.
import { z } from 'zod';
import { ADMIN_ERRORS } from './admin-config-routes.js';
import { Id } from './primitives.js';
import type { RouteSpec } from './routes.js';

/** Longest window one request may ask for, in days (both ends included). */
export const USAGE_MAX_DAYS = 366;
export const USAGE_FORMATS = ['json', 'csv'] as const;

const DAY_MS = 86_400_000;

function dayExists(day: string): boolean {
  const date = new Date(`${day}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === day;
}

/** A UTC calendar day, `YYYY-MM-DD`, that exists (`2026-02-30` is refused). */
export const UsageDay = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'must be a day, YYYY-MM-DD' })
  .refine((day) => dayExists(day), {
    message: 'must be a day that exists',
  });

export const UsageQuery = z
  .strictObject({
    tenant_id: Id.optional(),
    from: UsageDay,
    /** Included. */
    to: UsageDay,
    format: z.enum(USAGE_FORMATS).default('json'),
  })
  .refine((query) => query.from <= query.to, { message: 'from must not be after to', path: ['to'] })
  .refine((query) => Date.parse(query.to) - Date.parse(query.from) < USAGE_MAX_DAYS * DAY_MS, {
    message: `the window may cover at most ${USAGE_MAX_DAYS} days`,
    path: ['to'],
  });
export type UsageQuery = z.infer<typeof UsageQuery>;

const Seconds = z.number().nonnegative();
const Count = z.number().int().nonnegative();

export const UsageRow = z.object({
  tenant_id: z.string(),
  day: z.string(),
  /** Seconds (millisecond precision) the tenant's sandboxes spent in each state that day. */
  sandbox_seconds: z.object({
    active: Seconds,
    idle: Seconds,
    suspended: Seconds,
    provisioning: Seconds,
  }),
  /** Bindings created that day. */
  sessions: Count,
  /** Capability tokens issued that day (negotiation, refresh, exchange). */
  tokens_minted: Count,
  /** Programs started by the tenant's agents (their counters, collected by the broker). */
  commands_run: Count,
  /** Bytes written by file uploads, and bytes of file content served, by the agents. */
  file_bytes_in: Count,
  file_bytes_out: Count,
  /** `execute_code` calls (rows of sandbox_invocations created that day). */
  execute_code_calls: Count,
});
export type UsageRow = z.infer<typeof UsageRow>;

export const UsageReport = z.object({
  from: z.string(),
  to: z.string(),
  /** One row per tenant and day with any usage, by day then tenant. */
  items: z.array(UsageRow),
});
export type UsageReport = z.infer<typeof UsageReport>;

export const ADMIN_USAGE_ROUTES = {
  adminUsage: {
    method: 'GET',
    path: '/admin/usage',
    summary: 'Usage per tenant and UTC day (JSON, or CSV streamed with format=csv)',
    params: z.strictObject({}),
    query: UsageQuery,
    response: UsageReport,
    errors: ADMIN_ERRORS,
  },
} as const satisfies Record<string, RouteSpec>;
