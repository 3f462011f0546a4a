// The two execute_code caps of a call (docs/execute-code.md "Quotas"): the tenant's
// UTC day and the agent's UTC hour, each a counter keyed by its window's start.
import type { CapDimension } from '@sbx/protocol';
import type { QuotaCounter } from '../../store/index.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export interface Caps {
  readonly tenantDaily: number;
  readonly agentHourly: number;
}

export interface QuotaWindow extends QuotaCounter {
  readonly resetsAt: Date;
}

function windowOf(at: number, lengthMs: number): { start: Date; end: Date } {
  const start = Math.floor(at / lengthMs) * lengthMs;
  return { start: new Date(start), end: new Date(start + lengthMs) };
}

/** Ids never contain a newline, so `tenant\nagent` names one agent of one tenant unambiguously. */
export function agentSubject(tenantId: string, agentId: string): string {
  return `${tenantId}\n${agentId}`;
}

/** The tenant's day first: every call of a tenant queues on that one row, in one order. */
export function quotaWindows(
  tenantId: string,
  agentId: string,
  caps: Caps,
  now: number,
): [QuotaWindow, QuotaWindow] {
  const day = windowOf(now, DAY_MS);
  const hour = windowOf(now, HOUR_MS);
  return [
    {
      dimension: 'tenant_daily',
      subject: tenantId,
      windowStart: day.start,
      cap: caps.tenantDaily,
      resetsAt: day.end,
    },
    {
      dimension: 'agent_hourly',
      subject: agentSubject(tenantId, agentId),
      windowStart: hour.start,
      cap: caps.agentHourly,
      resetsAt: hour.end,
    },
  ];
}

export function resetsAtOf(windows: readonly QuotaWindow[], dimension: CapDimension): Date {
  const window = windows.find((w) => w.dimension === dimension);
  if (window === undefined) throw new Error(`no quota window ${dimension}`);
  return window.resetsAt;
}
