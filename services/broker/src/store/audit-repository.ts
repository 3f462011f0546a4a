// The audit log: append-only, read back in the order it was written (by its
// bigserial id, which the records expose as a decimal string so they survive
// JSON.stringify).
import { SbxError } from '@sbx/protocol';
import type { AuditEvent, Prisma, PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';

export interface NewAuditEvent {
  readonly action: string;
  readonly outcome: string;
  readonly at?: Date;
  readonly requestId?: string | null;
  readonly tenantId?: string | null;
  readonly callerId?: string | null;
  readonly callerType?: string | null;
  readonly actorType?: string | null;
  readonly actorId?: string | null;
  readonly clientId?: string | null;
  readonly scopeType?: string | null;
  readonly scopeId?: string | null;
  readonly sessionId?: string | null;
  readonly sandboxId?: string | null;
  readonly jti?: string | null;
  readonly scopes?: readonly string[];
  /** Free-form JSON; must not carry secrets or tokens. */
  readonly detail?: Prisma.InputJsonValue | null;
}

export type AuditEventRecord = Omit<AuditEvent, 'id'> & { readonly id: string };

export interface ListAuditOptions {
  /** Only events after this id (exclusive), for paging. */
  readonly afterId?: string;
  /** Default 100, at most 1000. */
  readonly limit?: number;
}

const MAX_PAGE = 1000;

function toRecord(event: AuditEvent): AuditEventRecord {
  return { ...event, id: event.id.toString() };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function scrubbed(value: unknown): unknown {
  if (typeof value === 'string')
    return value.replace(LONE_SURROGATE, '\uFFFD').replaceAll('\u0000', '\uFFFD');
  if (Array.isArray(value)) return value.map((item: unknown) => scrubbed(item));
  if (typeof value !== 'object' || value === null || value instanceof Date) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [scrubbed(key), scrubbed(item)]));
}

function storable<T>(value: T): T {
  // scrubbed keeps every value's shape (strings stay strings, arrays arrays, objects objects
  // with the same keys up to the replaced characters), so the event keeps its type.
  // oxlint-disable-next-line typescript/no-unsafe-type-assertion
  return scrubbed(value) as T;
}

/**
 * `event` as Postgres can store it: text and jsonb refuse NUL, jsonb refuses lone surrogates,
 * and a refused row is an audit event lost (a caller naming `%00` in a path would leave no
 * trace of a refused attempt). Both become U+FFFD in every string of the event, detail included.
 */
export function storableAuditEvent(event: NewAuditEvent): NewAuditEvent {
  return storable(event);
}

/** The row an event becomes (the journal writer's batches go through storableAuditEvent too). */
export function auditRow(event: NewAuditEvent): Prisma.AuditEventCreateManyInput {
  const { detail, scopes, ...rest } = storableAuditEvent(event);
  return {
    ...rest,
    scopes: scopes === undefined ? [] : [...scopes],
    ...(detail === undefined || detail === null ? {} : { detail }),
  };
}

export class AuditRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async append(event: NewAuditEvent): Promise<AuditEventRecord> {
    const created = await guard('append audit event', () =>
      this.prisma.auditEvent.create({ data: auditRow(event) }),
    );
    return toRecord(created);
  }

  /**
   * The newest event that ended the sandbox, when one was recorded: the release of its last
   * binding (`sandbox.terminated`), or a move to `terminated` or `failed` (`sandbox.state`:
   * an admin, a deletion, the lease reaper), whose caller is who ended it.
   */
  findEnding(sandboxId: string): Promise<AuditEventRecord | null> {
    return guard('find sandbox ending', async () => {
      const event = await this.prisma.auditEvent.findFirst({
        where: {
          sandboxId,
          outcome: 'ok',
          OR: [
            { action: 'sandbox.terminated' },
            { action: 'sandbox.state', detail: { path: ['to'], equals: 'terminated' } },
            { action: 'sandbox.state', detail: { path: ['to'], equals: 'failed' } },
          ],
        },
        orderBy: { id: 'desc' },
      });
      return event === null ? null : toRecord(event);
    });
  }

  listBySandbox(sandboxId: string, options: ListAuditOptions = {}): Promise<AuditEventRecord[]> {
    return this.list({ sandboxId }, options);
  }

  listBySession(sessionId: string, options: ListAuditOptions = {}): Promise<AuditEventRecord[]> {
    return this.list({ sessionId }, options);
  }

  private async list(
    where: Prisma.AuditEventWhereInput,
    options: ListAuditOptions,
  ): Promise<AuditEventRecord[]> {
    const take = Math.min(Math.max(Math.trunc(options.limit ?? 100), 1), MAX_PAGE);
    if (options.afterId !== undefined && !/^\d{1,19}$/.test(options.afterId)) {
      throw new SbxError('BAD_REQUEST', 'afterId must be an audit event id');
    }
    const events = await guard('list audit events', () =>
      this.prisma.auditEvent.findMany({
        where: {
          ...where,
          ...(options.afterId === undefined ? {} : { id: { gt: BigInt(options.afterId) } }),
        },
        orderBy: { id: 'asc' },
        take,
      }),
    );
    return events.map(toRecord);
  }
}
