// The lifecycle's queries: which sandboxes a timer has run out on, and state
// changes that are conditional, atomic and audited. A change is an optimistic
// update (`WHERE id AND state AND <still due>`), so two reapers, or a reaper
// racing a heartbeat, can never both apply it; the audit row and the release
// of a final sandbox's bindings commit in the same transaction.
import type { NewAuditEvent } from './audit-repository.js';
import type { Prisma, PrismaClient, SandboxState } from './generated/client.js';
import { guard } from './db-errors.js';
import type { SandboxRecord } from './sandbox-repository.js';
import { assertMoves, enteringState, FINAL_STATES } from './sandbox-states.js';

/** Conditions a sandbox must meet to be due; all given ones must hold. */
export interface DueFilter {
  readonly states: readonly SandboxState[];
  /** `hardExpiresAt` before this time. */
  readonly hardExpiredBefore?: Date;
  /** `hardExpiresAt` at or after this time (keeps hard-TTL cases out of other passes). */
  readonly hardExpiresFrom?: Date;
  /** `leaseExpiresAt` before this time. */
  readonly leaseExpiredBefore?: Date;
  /** Neither created nor heard from (heartbeat) since this time. */
  readonly silentSince?: Date;
  /** Entered `failed` before this time. */
  readonly failedBefore?: Date;
}

export type DueSandbox = Pick<
  SandboxRecord,
  'id' | 'state' | 'tenantId' | 'ownerId' | 'scopeType' | 'scopeId' | 'provider' | 'hostInstance'
>;

/** Where a walk over sandboxes in creation order stopped: the last row it saw. */
export type SandboxCursor = Pick<SandboxRecord, 'createdAt' | 'id'>;

export type PagedSandbox = DueSandbox & SandboxCursor;

/** Sandboxes of one provider in some states (a start-up reconciliation's walk). */
export interface PageFilter {
  readonly provider: string;
  readonly states: readonly SandboxState[];
}

export interface StateChange {
  readonly sandboxId: string;
  readonly to: SandboxState;
  /** Evaluated on the row in the same statement that changes it. */
  readonly due: DueFilter;
  readonly at: Date;
  readonly failureReason?: string;
  /** The audit row to write with the change, given the state it left. */
  readonly audit: (from: SandboxState, sandbox: DueSandbox, releasedBindings: number) => NewAuditEvent;
}

export type StateChangeResult =
  | { readonly applied: true; readonly from: SandboxState; readonly releasedBindings: number }
  /** `state` is the sandbox's state now, null when it does not exist. */
  | { readonly applied: false; readonly state: SandboxState | null };

// A background job can wait out a burst of negotiations holding the connections
// (pg) or the single session (PGlite).
const TX_OPTIONS = { maxWait: 10_000, timeout: 10_000 } as const;

const DUE_FIELDS = {
  id: true,
  state: true,
  tenantId: true,
  ownerId: true,
  scopeType: true,
  scopeId: true,
  provider: true,
  hostInstance: true,
} as const;

function dueWhere(filter: DueFilter): Prisma.SandboxWhereInput {
  const hard =
    filter.hardExpiredBefore === undefined && filter.hardExpiresFrom === undefined
      ? {}
      : { hardExpiresAt: { lt: filter.hardExpiredBefore, gte: filter.hardExpiresFrom } };
  return {
    state: { in: [...filter.states] },
    ...hard,
    ...(filter.leaseExpiredBefore === undefined ? {} : { leaseExpiresAt: { lt: filter.leaseExpiredBefore } }),
    ...(filter.silentSince === undefined
      ? {}
      : { createdAt: { lt: filter.silentSince }, lastHeartbeatAt: { lt: filter.silentSince } }),
    ...(filter.failedBefore === undefined ? {} : { failedAt: { lt: filter.failedBefore } }),
  };
}

function auditData(event: NewAuditEvent): Prisma.AuditEventCreateInput {
  const { detail, scopes, ...rest } = event;
  return {
    ...rest,
    scopes: scopes === undefined ? [] : [...scopes],
    ...(detail === undefined || detail === null ? {} : { detail }),
  };
}

export class ReaperRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * The next `limit` sandboxes matching `filter` after `after`, oldest first.
   * Keyset paging: rows that change state behind the cursor never shift a page.
   */
  listPage(filter: PageFilter, after: SandboxCursor | undefined, limit: number): Promise<PagedSandbox[]> {
    const past =
      after === undefined
        ? {}
        : {
            OR: [
              { createdAt: { gt: after.createdAt } },
              { createdAt: after.createdAt, id: { gt: after.id } },
            ],
          };
    return guard('list sandboxes of a provider', () =>
      this.prisma.sandbox.findMany({
        where: { provider: filter.provider, state: { in: [...filter.states] }, ...past },
        select: { ...DUE_FIELDS, createdAt: true },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
        take: limit,
      }),
    );
  }

  /** The recorded state of each of `ids` that has a row (a reconciler's orphan check). */
  async statesOf(ids: readonly string[]): Promise<Map<string, SandboxState>> {
    if (ids.length === 0) return new Map();
    const rows = await guard('read sandbox states', () =>
      this.prisma.sandbox.findMany({ where: { id: { in: [...ids] } }, select: { id: true, state: true } }),
    );
    return new Map(rows.map((row) => [row.id, row.state]));
  }

  /** Due sandboxes, oldest first, at most `limit`. */
  listDue(filter: DueFilter, limit: number): Promise<DueSandbox[]> {
    return guard('list due sandboxes', () =>
      this.prisma.sandbox.findMany({
        where: dueWhere(filter),
        select: DUE_FIELDS,
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
        take: limit,
      }),
    );
  }

  async isDue(sandboxId: string, filter: DueFilter): Promise<boolean> {
    const count = await guard('check due sandbox', () =>
      this.prisma.sandbox.count({ where: { AND: [{ id: sandboxId }, dueWhere(filter)] } }),
    );
    return count === 1;
  }

  /**
   * Applies the change only while the sandbox is still due, writing what
   * entering the state writes (`enteringState`); a final state also releases
   * its bindings. Writes the audit row in the same transaction. INTERNAL when
   * a due state cannot move to `change.to` in the protocol.
   */
  async applyStateChange(change: StateChange): Promise<StateChangeResult> {
    assertMoves(change.due.states, change.to);
    return await guard('change sandbox state', () =>
      this.prisma.$transaction(async (tx): Promise<StateChangeResult> => {
        const current = await tx.sandbox.findUnique({ where: { id: change.sandboxId }, select: DUE_FIELDS });
        if (current === null) return { applied: false, state: null };
        const final = FINAL_STATES.includes(change.to);
        const { count } = await tx.sandbox.updateMany({
          where: { AND: [{ id: change.sandboxId, state: current.state }, dueWhere(change.due)] },
          data: {
            ...enteringState(change.to, change.at),
            ...(change.failureReason === undefined ? {} : { failureReason: change.failureReason }),
          },
        });
        if (count === 0) return { applied: false, state: current.state };
        const released = final
          ? await tx.sessionBinding.updateMany({
              where: { sandboxId: change.sandboxId, live: true },
              data: { live: null, releasedAt: change.at },
            })
          : { count: 0 };
        await tx.auditEvent.create({ data: auditData(change.audit(current.state, current, released.count)) });
        return { applied: true, from: current.state, releasedBindings: released.count };
      }, TX_OPTIONS),
    );
  }

  /**
   * An agent its provider restarted on the sandbox's workspace: where it listens now (the
   * same address when its port was free) and the audit row, in one transaction, for an
   * `active` or `idle` sandbox only. False, with nothing written, for any other.
   */
  async recordAgentRestart(
    sandboxId: string,
    dataplane: { readonly httpBaseUrl: string; readonly wsBaseUrl: string },
    audit: (sandbox: DueSandbox) => NewAuditEvent,
  ): Promise<boolean> {
    return await guard('record an agent restart', () =>
      this.prisma.$transaction(async (tx) => {
        const { count } = await tx.sandbox.updateMany({
          where: { id: sandboxId, state: { in: ['active', 'idle'] } },
          data: { httpBaseUrl: dataplane.httpBaseUrl, wsBaseUrl: dataplane.wsBaseUrl },
        });
        if (count === 0) return false;
        const sandbox = await tx.sandbox.findUniqueOrThrow({ where: { id: sandboxId }, select: DUE_FIELDS });
        await tx.auditEvent.create({ data: auditData(audit(sandbox)) });
        return true;
      }, TX_OPTIONS),
    );
  }

  /**
   * Releases live bindings left on sandboxes that no longer serve their scope
   * (a binding created while its sandbox was being terminated); returns how many.
   */
  async releaseOrphanedBindings(at: Date): Promise<number> {
    const { count } = await guard('release orphaned bindings', () =>
      this.prisma.sessionBinding.updateMany({
        where: { live: true, sandbox: { live: null } },
        data: { live: null, releasedAt: at },
      }),
    );
    return count;
  }
}
