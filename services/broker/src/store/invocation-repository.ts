// sandbox_invocations (docs/execute-code.md "Audit"): one row per execute_code call,
// append-only. There is deliberately no update method; the database refuses UPDATEs
// with a trigger and keeps `purge_after` within 180 days with a CHECK.
import type { ExecuteCodeExitStatus } from '@sbx/protocol';
import type { PrismaClient, SandboxInvocation } from './generated/client.js';
import { guard } from './db-errors.js';

export type InvocationRecord = SandboxInvocation;

export interface NewInvocation {
  readonly id: string;
  readonly createdAt: Date;
  readonly tenantId: string;
  readonly agentId: string;
  readonly sessionId: string | null;
  readonly sandboxId: string | null;
  readonly scopeType: string | null;
  readonly scopeId: string | null;
  readonly language: string;
  readonly executedCodeHash: string;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly exitStatus: ExecuteCodeExitStatus;
  readonly failureReason: string | null;
  readonly durationMs: number;
  readonly purgeAfter: Date;
}

export interface InvocationFilter {
  readonly tenantId?: string | undefined;
  readonly agentId?: string | undefined;
  readonly sandboxId?: string | undefined;
  readonly exitStatus?: ExecuteCodeExitStatus | undefined;
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
}

/** Newest first; the cursor is the last row of the previous page. */
export interface InvocationCursor {
  readonly createdAt: Date;
  readonly id: string;
}

const PURGE_BATCH = 5_000;

export class InvocationRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * One row, on its own. execute_code's calls write theirs through the journal's group
   * commit (`JournalWriter.recordInvocation`); this is for tools and for checking the table.
   */
  async record(invocation: NewInvocation): Promise<void> {
    await guard('record sandbox invocation', () =>
      this.prisma.sandboxInvocation.create({
        data: {
          ...invocation,
          stdoutBytes: BigInt(invocation.stdoutBytes),
          stderrBytes: BigInt(invocation.stderrBytes),
        },
      }),
    );
  }

  /** One page, newest first. */
  list(filter: InvocationFilter, limit: number, after?: InvocationCursor): Promise<InvocationRecord[]> {
    const where = {
      ...(filter.tenantId === undefined ? {} : { tenantId: filter.tenantId }),
      ...(filter.agentId === undefined ? {} : { agentId: filter.agentId }),
      ...(filter.sandboxId === undefined ? {} : { sandboxId: filter.sandboxId }),
      ...(filter.exitStatus === undefined ? {} : { exitStatus: filter.exitStatus }),
      createdAt: {
        ...(filter.since === undefined ? {} : { gte: filter.since }),
        ...(filter.until === undefined ? {} : { lt: filter.until }),
      },
    };
    const page =
      after === undefined
        ? {}
        : {
            OR: [
              { createdAt: { lt: after.createdAt } },
              { createdAt: after.createdAt, id: { lt: after.id } },
            ],
          };
    return guard('list sandbox invocations', () =>
      this.prisma.sandboxInvocation.findMany({
        where: { AND: [where, page] },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: limit,
      }),
    );
  }

  /** Deletes rows past their retention, in batches so a backlog never holds a long lock. */
  async purgeExpired(now: Date): Promise<number> {
    let purged = 0;
    for (;;) {
      const deleted = await guard(
        'purge sandbox invocations',
        () =>
          this.prisma.$executeRaw`
          DELETE FROM "sandbox_invocations" WHERE "id" IN (
            SELECT "id" FROM "sandbox_invocations" WHERE "purge_after" < ${now} LIMIT ${PURGE_BATCH})`,
      );
      purged += deleted;
      if (deleted < PURGE_BATCH) return purged;
    }
  }
}
