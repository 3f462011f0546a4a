// Group commit for the append-only rows of calls: token issuances, audit events and
// execute_code invocations. Rows queued while a write is in flight go out together in
// the next one (one statement inserting into all three tables), so 16 concurrent
// requests cost a handful of commits instead of 48. Callers await their own row; rows of
// calls already answered (`appendSoon`, `recordInvocation`) may wait a moment for company.
import { SbxError } from '@sbx/protocol';
import type { PrismaClient } from './generated/client.js';
import type { NewAuditEvent } from './audit-repository.js';
import { guard } from './db-errors.js';
import { auditJson, invocationJson, issuanceJson, WRITE_JOURNAL } from './journal-sql.js';
import type { NewInvocation } from './invocation-repository.js';
import { ISSUANCE_CONSTRAINTS, type NewTokenIssuance } from './token-issuance-repository.js';

type Row =
  | { readonly kind: 'audit'; readonly event: NewAuditEvent }
  | { readonly kind: 'invocation'; readonly invocation: NewInvocation }
  | Issuance;
type Issuance = { readonly kind: 'issuance'; readonly issuance: NewTokenIssuance };

interface Pending {
  readonly row: Row;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/** How long a row of an answered call may wait to share its commit with others. */
const LINGER_MS = 25;
/** Enough to amortize the commit; small enough that one statement stays cheap to plan. */
const MAX_BATCH = 256;
export interface JournalOptions {
  /** Rows waiting beyond this mean the database is not keeping up: refuse (503) rather than queue. */
  readonly maxQueued?: number;
}

export class JournalWriter {
  #queue: Pending[] = [];
  #scheduled = false;
  #lingering: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;

  readonly #maxQueued: number;

  constructor(
    private readonly prisma: PrismaClient,
    options: JournalOptions = {},
  ) {
    this.#maxQueued = options.maxQueued ?? 10_000;
  }

  /** Resolves once every row queued so far is written or refused (shutdown waits for this). */
  async drain(): Promise<void> {
    while (this.#writing !== undefined || this.#queue.length > 0) {
      this.#schedule();
      await (this.#writing ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }

  /** An audit event (the AuditTrail's sink). */
  append(event: NewAuditEvent): Promise<void> {
    return this.#enqueue({ kind: 'audit', event }, 'now');
  }

  /**
   * An audit event of a call already answered: it may wait up to LINGER_MS for company, so
   * a stream of such calls shares commits instead of paying one each.
   */
  appendSoon(event: NewAuditEvent): Promise<void> {
    return this.#enqueue({ kind: 'audit', event }, 'soon');
  }

  /** An execute_code call's sandbox_invocations row, written after its answer left. */
  recordInvocation(invocation: NewInvocation): Promise<void> {
    return this.#enqueue({ kind: 'invocation', invocation }, 'soon');
  }

  /** A token issuance; CONFLICT when the jti was already recorded. */
  record(issuance: NewTokenIssuance): Promise<void> {
    return this.#enqueue({ kind: 'issuance', issuance }, 'now');
  }

  #enqueue(row: Row, when: 'now' | 'soon'): Promise<void> {
    if (this.#queue.length >= this.#maxQueued) {
      return Promise.reject(new SbxError('BACKEND_UNAVAILABLE', 'the audit journal is not keeping up'));
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ row, resolve, reject });
      if (when === 'now') this.#schedule();
      else this.#linger();
    });
  }

  #linger(): void {
    if (this.#scheduled || this.#lingering !== undefined) return;
    this.#lingering = setTimeout(() => {
      this.#lingering = undefined;
      this.#schedule();
    }, LINGER_MS);
  }

  #schedule(): void {
    if (this.#scheduled || this.#writing !== undefined || this.#queue.length === 0) return;
    clearTimeout(this.#lingering);
    this.#lingering = undefined;
    this.#scheduled = true;
    // After this turn's I/O callbacks: rows queued by requests served in the same turn join the batch.
    setImmediate(() => {
      this.#scheduled = false;
      this.#writing = this.#writeNext().finally(() => {
        this.#writing = undefined;
        this.#schedule();
      });
    });
  }

  async #writeNext(): Promise<void> {
    const batch = this.#queue.splice(0, MAX_BATCH);
    try {
      await this.#write(batch.map((pending) => pending.row));
      for (const pending of batch) pending.resolve();
    } catch (err) {
      // A database that is down fails every row alike: say so at once instead of row by row.
      if (batch.length === 1 || !isRowError(err)) {
        for (const pending of batch) pending.reject(err);
        return;
      }
      // One bad row must not fail its neighbours: write them one by one to find it.
      for (const pending of batch) {
        await this.#write([pending.row]).then(pending.resolve, pending.reject);
      }
    }
  }

  /** One statement whatever the batch: its SQL never changes, so it is planned once per connection. */
  async #write(rows: readonly Row[]): Promise<unknown> {
    const audits = rows.flatMap((row) => (row.kind === 'audit' ? [auditJson(row.event)] : []));
    const issuances = rows.flatMap((row) => (row.kind === 'issuance' ? [issuanceJson(row.issuance)] : []));
    const invocations = rows.flatMap((row) =>
      row.kind === 'invocation' ? [invocationJson(row.invocation)] : [],
    );
    return await guard(
      'write token issuances, invocations and audit events',
      () =>
        this.prisma.$executeRawUnsafe(
          WRITE_JOURNAL,
          JSON.stringify(issuances),
          JSON.stringify(audits),
          JSON.stringify(invocations),
        ),
      ISSUANCE_CONSTRAINTS,
    );
  }
}

/** An error about the rows themselves (a constraint, bad data), not about reaching the database. */
function isRowError(err: unknown): boolean {
  return !(err instanceof SbxError && err.code === 'BACKEND_UNAVAILABLE');
}
