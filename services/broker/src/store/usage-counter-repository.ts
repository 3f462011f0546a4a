// The agents' usage counters turned into per-day totals (docs/admin.md, "Usage"): an
// agent counts since it started (its boot id); `sandbox_agent_counters` keeps the last
// values seen per sandbox and `tenant_usage_days` the sums of what they grew by.
import type { PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';

export interface AgentCounters {
  readonly bootId: string;
  readonly commandsRun: number;
  readonly fileBytesIn: number;
  readonly fileBytesOut: number;
}

/** What one recording added to the tenant's day. */
export interface CounterDelta {
  readonly commandsRun: number;
  readonly fileBytesIn: number;
  readonly fileBytesOut: number;
}

/** A sandbox whose agent should be up: what the collector asks. */
export interface RunningSandbox {
  readonly id: string;
  readonly tenantId: string;
}

interface LastRow {
  boot_id: string;
  commands_run: bigint;
  file_bytes_in: bigint;
  file_bytes_out: bigint;
}

const FIELDS = ['commandsRun', 'fileBytesIn', 'fileBytesOut'] as const;

/** `YYYY-MM-DD` of an instant, UTC. */
const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/**
 * Same boot: what each counter grew by, never negative (a late, older report adds
 * nothing). Another boot, or nothing seen before: the agent counted from 0, so all of it.
 */
export function counterDelta(last: AgentCounters | undefined, next: AgentCounters): CounterDelta {
  const grown = (field: (typeof FIELDS)[number]): number =>
    last === undefined || last.bootId !== next.bootId
      ? Math.max(0, next[field])
      : Math.max(0, next[field] - last[field]);
  return {
    commandsRun: grown('commandsRun'),
    fileBytesIn: grown('fileBytesIn'),
    fileBytesOut: grown('fileBytesOut'),
  };
}

export class UsageCounterRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Sandboxes in a running state (active, idle): their agents are the ones to ask. */
  runningSandboxes(): Promise<RunningSandbox[]> {
    return guard('list running sandboxes', () =>
      this.prisma.sandbox.findMany({
        where: { state: { in: ['active', 'idle'] } },
        select: { id: true, tenantId: true },
        orderBy: { id: 'asc' },
      }),
    );
  }

  /** The tenant of a sandbox, whatever its state; undefined when there is no such sandbox. */
  tenantOf(sandboxId: string): Promise<string | undefined> {
    return guard('find the tenant of a sandbox', async () => {
      const row = await this.prisma.sandbox.findUnique({
        where: { id: sandboxId },
        select: { tenantId: true },
      });
      return row?.tenantId;
    });
  }

  /**
   * In one transaction: locks the sandbox's last values (a placeholder row with an empty
   * boot id first, so concurrent first recordings queue on it), adds the delta to the
   * tenant's UTC day of `now`, and keeps the new values (the larger ones within a boot,
   * so an older report arriving late cannot make the next one count twice).
   */
  record(sandboxId: string, tenantId: string, counters: AgentCounters, now: Date): Promise<CounterDelta> {
    return guard('record agent usage counters', () =>
      this.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`
          INSERT INTO "sandbox_agent_counters"
            ("sandbox_id", "boot_id", "commands_run", "file_bytes_in", "file_bytes_out", "updated_at")
          VALUES (${sandboxId}, '', 0, 0, 0, ${now})
          ON CONFLICT ("sandbox_id") DO NOTHING`;
        const [row] = await tx.$queryRaw<LastRow[]>`
          SELECT "boot_id", "commands_run", "file_bytes_in", "file_bytes_out"
          FROM "sandbox_agent_counters" WHERE "sandbox_id" = ${sandboxId} FOR UPDATE`;
        const last = row === undefined || row.boot_id === '' ? undefined : fromRow(row);
        const delta = counterDelta(last, counters);
        const kept = (field: (typeof FIELDS)[number]): bigint =>
          BigInt(last?.bootId === counters.bootId ? Math.max(last[field], counters[field]) : counters[field]);
        await tx.$executeRaw`
          UPDATE "sandbox_agent_counters"
          SET "boot_id" = ${counters.bootId}, "commands_run" = ${kept('commandsRun')},
              "file_bytes_in" = ${kept('fileBytesIn')}, "file_bytes_out" = ${kept('fileBytesOut')},
              "updated_at" = ${now}
          WHERE "sandbox_id" = ${sandboxId}`;
        if (FIELDS.some((field) => delta[field] > 0))
          await tx.$executeRaw`
            INSERT INTO "tenant_usage_days" ("tenant_id", "day", "commands_run", "file_bytes_in", "file_bytes_out")
            VALUES (${tenantId}, ${utcDay(now)}::date, ${BigInt(delta.commandsRun)},
                    ${BigInt(delta.fileBytesIn)}, ${BigInt(delta.fileBytesOut)})
            ON CONFLICT ("tenant_id", "day") DO UPDATE SET
              "commands_run" = "tenant_usage_days"."commands_run" + EXCLUDED."commands_run",
              "file_bytes_in" = "tenant_usage_days"."file_bytes_in" + EXCLUDED."file_bytes_in",
              "file_bytes_out" = "tenant_usage_days"."file_bytes_out" + EXCLUDED."file_bytes_out"`;
        return delta;
      }),
    );
  }
}

function fromRow(row: LastRow): AgentCounters {
  return {
    bootId: row.boot_id,
    commandsRun: Number(row.commands_run),
    fileBytesIn: Number(row.file_bytes_in),
    fileBytesOut: Number(row.file_bytes_out),
  };
}
