// The usage report's reads (docs/admin.md, "Usage"): state intervals from
// `sandbox_state_changes` (one row per state entered, written by a trigger in the
// transaction of the change), bindings, token issuances and execute_code calls
// counted per UTC day, and the agents' counters summed per day by the usage collector.
import { Prisma, type PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';

export interface UsageWindow {
  readonly tenantId?: string | undefined;
  /** Inclusive. */
  readonly from: Date;
  /** Exclusive. */
  readonly to: Date;
}

/** A span a sandbox of the tenant spent in a state; `until` null while it still is. */
export interface StateInterval {
  readonly tenantId: string;
  readonly state: string;
  readonly since: Date;
  readonly until: Date | null;
}

export interface DailyCount {
  readonly tenantId: string;
  /** `YYYY-MM-DD` (UTC). */
  readonly day: string;
  readonly count: number;
}

/** The agents' counters a tenant's sandboxes grew by that day (`tenant_usage_days`). */
export interface DailyAgentUsage {
  readonly tenantId: string;
  readonly day: string;
  readonly commandsRun: number;
  readonly fileBytesIn: number;
  readonly fileBytesOut: number;
}

/** The states whose time is accounted; terminated and failed cost nothing. */
export const ACCOUNTED_STATES = ['provisioning', 'active', 'idle', 'suspended'] as const;

const tenantIs = (column: Prisma.Sql, tenantId: string | undefined): Prisma.Sql =>
  tenantId === undefined ? Prisma.empty : Prisma.sql`AND ${column} = ${tenantId}`;

interface CountRow {
  tenant_id: string;
  day: string;
  count: number;
}

const toCounts = (rows: CountRow[]): DailyCount[] =>
  rows.map((row) => ({ tenantId: row.tenant_id, day: row.day, count: row.count }));

const dayOf = (at: Date): string => at.toISOString().slice(0, 10);

export class AdminUsageQueries {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Spans in an accounted state that overlap the window. A span ends where the
   * sandbox's next change begins; changes after the window are not read, so a span
   * still open at `to` has `until` null or later than `to` (callers clip it).
   */
  stateIntervals(window: UsageWindow): Promise<StateInterval[]> {
    return guard('query sandbox state intervals', async () => {
      const rows = await this.prisma.$queryRaw<
        { tenant_id: string; state: string; since: Date; until: Date | null }[]
      >`
        SELECT c.tenant_id, c.state, c.since, c.until FROM (
          SELECT tenant_id, state::text AS state, at AS since,
                 LEAD(at) OVER (PARTITION BY sandbox_id ORDER BY at, id) AS until
          FROM sandbox_state_changes
          WHERE at < ${window.to} ${tenantIs(Prisma.sql`tenant_id`, window.tenantId)}
        ) c
        WHERE (c.until IS NULL OR c.until > ${window.from})
          AND c.state IN (${Prisma.join([...ACCOUNTED_STATES])})`;
      return rows.map((row) => ({
        tenantId: row.tenant_id,
        state: row.state,
        since: new Date(row.since),
        until: row.until === null ? null : new Date(row.until),
      }));
    });
  }

  /** Bindings (sessions) created per tenant and day. */
  sessionsPerDay(window: UsageWindow): Promise<DailyCount[]> {
    return guard('count sessions per day', async () =>
      toCounts(
        await this.prisma.$queryRaw<CountRow[]>`
          SELECT tenant_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS count
          FROM session_bindings
          WHERE created_at >= ${window.from} AND created_at < ${window.to}
            ${tenantIs(Prisma.sql`tenant_id`, window.tenantId)}
          GROUP BY 1, 2`,
      ),
    );
  }

  /** Token issuances per tenant (their audience sandbox's) and day. */
  tokensPerDay(window: UsageWindow): Promise<DailyCount[]> {
    return guard('count tokens per day', async () =>
      toCounts(
        await this.prisma.$queryRaw<CountRow[]>`
          SELECT s.tenant_id, to_char(t.issued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS count
          FROM token_issuances t JOIN sandboxes s ON s.id = t.aud
          WHERE t.issued_at >= ${window.from} AND t.issued_at < ${window.to}
            ${tenantIs(Prisma.sql`s.tenant_id`, window.tenantId)}
          GROUP BY 1, 2`,
      ),
    );
  }

  /** `execute_code` calls per tenant and day: rows of `sandbox_invocations` by `created_at`. */
  invocationsPerDay(window: UsageWindow): Promise<DailyCount[]> {
    return guard('count execute_code calls per day', async () =>
      toCounts(
        await this.prisma.$queryRaw<CountRow[]>`
          SELECT tenant_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS count
          FROM sandbox_invocations
          WHERE created_at >= ${window.from} AND created_at < ${window.to}
            ${tenantIs(Prisma.sql`tenant_id`, window.tenantId)}
          GROUP BY 1, 2`,
      ),
    );
  }

  /** The agents' counters per tenant and day, as the usage collector summed them. */
  agentUsagePerDay(window: UsageWindow): Promise<DailyAgentUsage[]> {
    return guard('read agent usage per day', async () => {
      const rows = await this.prisma.$queryRaw<
        {
          tenant_id: string;
          day: string;
          commands_run: bigint;
          file_bytes_in: bigint;
          file_bytes_out: bigint;
        }[]
      >`
        SELECT tenant_id, to_char(day, 'YYYY-MM-DD') AS day, commands_run, file_bytes_in, file_bytes_out
        FROM tenant_usage_days
        WHERE day >= ${dayOf(window.from)}::date AND day < ${dayOf(window.to)}::date
          ${tenantIs(Prisma.sql`tenant_id`, window.tenantId)}`;
      return rows.map((row) => ({
        tenantId: row.tenant_id,
        day: row.day,
        commandsRun: Number(row.commands_run),
        fileBytesIn: Number(row.file_bytes_in),
        fileBytesOut: Number(row.file_bytes_out),
      }));
    });
  }
}
