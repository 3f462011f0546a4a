// `GET /admin/usage`: per tenant and UTC day, the seconds its sandboxes spent in
// each accounted state (spans split at midnight UTC and clipped to the window and
// to now), the bindings created, the tokens minted, the execute_code calls and
// the agents' counters (programs run, file bytes in and out) the collector summed.
import type { UsageQuery, UsageReport, UsageRow } from '@sbx/protocol';
import type {
  AdminUsageQueries,
  DailyAgentUsage,
  DailyCount,
  StateInterval,
} from '../../store/admin-usage-queries.js';

const DAY_MS = 86_400_000;

type Accounted = keyof UsageRow['sandbox_seconds'];
const isAccounted = (state: string): state is Accounted =>
  state === 'active' || state === 'idle' || state === 'suspended' || state === 'provisioning';

interface Tally {
  readonly ms: Record<Accounted, number>;
  sessions: number;
  tokens: number;
  executeCode: number;
  commandsRun: number;
  fileBytesIn: number;
  fileBytesOut: number;
}

const emptyTally = (): Tally => ({
  ms: { active: 0, idle: 0, suspended: 0, provisioning: 0 },
  sessions: 0,
  tokens: 0,
  executeCode: 0,
  commandsRun: 0,
  fileBytesIn: 0,
  fileBytesOut: 0,
});

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
  queries: Pick<
    AdminUsageQueries,
    'stateIntervals' | 'sessionsPerDay' | 'tokensPerDay' | 'invocationsPerDay' | 'agentUsagePerDay'
  >,
  query: UsageQuery,
  now: number,
): Promise<UsageReport> {
  const window = { ...usageWindow(query), tenantId: query.tenant_id };
  const [intervals, sessions, tokens, invocations, agentUsage] = await Promise.all([
    queries.stateIntervals(window),
    queries.sessionsPerDay(window),
    queries.tokensPerDay(window),
    queries.invocationsPerDay(window),
    queries.agentUsagePerDay(window),
  ]);
  const tallies = new Map<string, Tally>();
  const tally = (tenantId: string, day: string): Tally => {
    const key = `${day}\u0000${tenantId}`;
    let found = tallies.get(key);
    if (found === undefined) {
      found = emptyTally();
      tallies.set(key, found);
    }
    return found;
  };
  splitByDay(intervals, window, now, (tenantId, day, state, ms) => {
    tally(tenantId, day).ms[state] += ms;
  });
  const count = (rows: readonly DailyCount[], field: 'sessions' | 'tokens' | 'executeCode') => {
    for (const row of rows) tally(row.tenantId, row.day)[field] += row.count;
  };
  count(sessions, 'sessions');
  count(tokens, 'tokens');
  count(invocations, 'executeCode');
  addAgentUsage(agentUsage, tally);
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
        commands_run: t.commandsRun,
        file_bytes_in: t.fileBytesIn,
        file_bytes_out: t.fileBytesOut,
        execute_code_calls: t.executeCode,
      };
    });
  return { from: query.from, to: query.to, items };
}

function addAgentUsage(
  rows: readonly DailyAgentUsage[],
  tally: (tenantId: string, day: string) => Tally,
): void {
  for (const row of rows) {
    const t = tally(row.tenantId, row.day);
    t.commandsRun += row.commandsRun;
    t.fileBytesIn += row.fileBytesIn;
    t.fileBytesOut += row.fileBytesOut;
  }
}
