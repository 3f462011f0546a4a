// `GET /admin/usage`: per tenant and UTC day, the seconds its sandboxes spent in
// each accounted state (spans split at midnight UTC and clipped to the window and
// to now), the bindings created and the tokens minted. Commands, file bytes and
// execute_code calls are not collected yet: null, never a made-up zero.
import type { UsageQuery, UsageReport, UsageRow } from '@sbx/protocol';
import type { AdminUsageQueries, DailyCount, StateInterval } from '../../store/admin-usage-queries.js';

const DAY_MS = 86_400_000;

type Accounted = keyof UsageRow['sandbox_seconds'];
const isAccounted = (state: string): state is Accounted =>
  state === 'active' || state === 'idle' || state === 'suspended' || state === 'provisioning';

interface Tally {
  readonly ms: Record<Accounted, number>;
  sessions: number;
  tokens: number;
}

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const startOf = (day: string): number => Date.parse(`${day}T00:00:00.000Z`);

/** The window of a query: `from` 00:00 UTC to the midnight after `to`. */
export function usageWindow(query: Pick<UsageQuery, 'from' | 'to'>): { from: Date; to: Date } {
  return { from: new Date(startOf(query.from)), to: new Date(startOf(query.to) + DAY_MS) };
}

/** Adds each span's milliseconds to the days it covers, within [from, min(to, now)). */
export function splitByDay(
  intervals: readonly StateInterval[],
  window: { from: Date; to: Date },
  now: number,
  add: (tenantId: string, day: string, state: Accounted, ms: number) => void,
): void {
  const end = Math.min(window.to.getTime(), now);
  for (const interval of intervals) {
    if (!isAccounted(interval.state)) continue;
    let start = Math.max(interval.since.getTime(), window.from.getTime());
    const stop = Math.min(interval.until?.getTime() ?? end, end);
    while (start < stop) {
      const midnight = (Math.floor(start / DAY_MS) + 1) * DAY_MS;
      const next = Math.min(midnight, stop);
      add(interval.tenantId, dayOf(start), interval.state, next - start);
      start = next;
    }
  }
}

export async function usageReport(
  queries: Pick<AdminUsageQueries, 'stateIntervals' | 'sessionsPerDay' | 'tokensPerDay'>,
  query: UsageQuery,
  now: number,
): Promise<UsageReport> {
  const window = { ...usageWindow(query), tenantId: query.tenant_id };
  const [intervals, sessions, tokens] = await Promise.all([
    queries.stateIntervals(window),
    queries.sessionsPerDay(window),
    queries.tokensPerDay(window),
  ]);
  const tallies = new Map<string, Tally>();
  const tally = (tenantId: string, day: string): Tally => {
    const key = `${day}\u0000${tenantId}`;
    let found = tallies.get(key);
    if (found === undefined) {
      found = { ms: { active: 0, idle: 0, suspended: 0, provisioning: 0 }, sessions: 0, tokens: 0 };
      tallies.set(key, found);
    }
    return found;
  };
  splitByDay(intervals, window, now, (tenantId, day, state, ms) => {
    tally(tenantId, day).ms[state] += ms;
  });
  const count = (rows: readonly DailyCount[], field: 'sessions' | 'tokens') => {
    for (const row of rows) tally(row.tenantId, row.day)[field] += row.count;
  };
  count(sessions, 'sessions');
  count(tokens, 'tokens');
  const items = [...tallies.entries()]
    .toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, t]): UsageRow => {
      const [day = '', tenantId = ''] = key.split('\u0000');
      const seconds = (state: Accounted) => t.ms[state] / 1000;
      return {
        tenant_id: tenantId,
        day,
        sandbox_seconds: {
          active: seconds('active'),
          idle: seconds('idle'),
          suspended: seconds('suspended'),
          provisioning: seconds('provisioning'),
        },
        sessions: t.sessions,
        tokens_minted: t.tokens,
        commands_run: null,
        file_bytes_in: null,
        file_bytes_out: null,
        execute_code_calls: null,
      };
    });
  return { from: query.from, to: query.to, items };
}
