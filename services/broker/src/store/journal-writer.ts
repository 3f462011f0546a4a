// Group commit for the append-only rows every session call writes: token
// issuances and audit events. Rows queued while a write is in flight go out
// together in the next one (one statement inserting into both tables),
// so 16 concurrent requests cost a handful of commits instead of 48. Callers
// still await their own row: nothing is answered before it is stored.
import type { PrismaClient } from './generated/client.js';
import type { NewAuditEvent } from './audit-repository.js';
import { guard } from './db-errors.js';
import { auditJson, issuanceJson, WRITE_JOURNAL } from './journal-sql.js';
import { ISSUANCE_CONSTRAINTS, type NewTokenIssuance } from './token-issuance-repository.js';

type Row = { readonly kind: 'audit'; readonly event: NewAuditEvent } | Issuance;
type Issuance = { readonly kind: 'issuance'; readonly issuance: NewTokenIssuance };

interface Pending {
  readonly row: Row;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/** Enough to amortize the commit; small enough that one statement stays cheap to plan. */
const MAX_BATCH = 256;

export class JournalWriter {
  #queue: Pending[] = [];
  #scheduled = false;
  #writing = false;

  constructor(private readonly prisma: PrismaClient) {}

  /** An audit event (the AuditTrail's sink). */
  append(event: NewAuditEvent): Promise<void> {
    return this.#enqueue({ kind: 'audit', event });
  }

  /** A token issuance; CONFLICT when the jti was already recorded. */
  record(issuance: NewTokenIssuance): Promise<void> {
    return this.#enqueue({ kind: 'issuance', issuance });
  }

  #enqueue(row: Row): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ row, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#writing || this.#queue.length === 0) return;
    this.#scheduled = true;
    // After this turn's I/O callbacks: rows queued by requests served in the same turn join the batch.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#writeNext();
    });
  }

  async #writeNext(): Promise<void> {
    this.#writing = true;
    const batch = this.#queue.splice(0, MAX_BATCH);
    try {
      await this.#write(batch.map((pending) => pending.row));
      for (const pending of batch) pending.resolve();
    } catch {
      // One bad row must not fail its neighbours: write them one by one to find it.
      for (const pending of batch) {
        await this.#write([pending.row]).then(pending.resolve, pending.reject);
      }
    } finally {
      this.#writing = false;
      this.#schedule();
    }
  }

  /** One statement whatever the batch: its SQL never changes, so it is planned once per connection. */
  #write(rows: readonly Row[]): Promise<unknown> {
    const audits = rows.flatMap((row) => (row.kind === 'audit' ? [auditJson(row.event)] : []));
    const issuances = rows.flatMap((row) => (row.kind === 'issuance' ? [issuanceJson(row.issuance)] : []));
    return guard(
      'write token issuances and audit events',
      () => this.prisma.$executeRawUnsafe(WRITE_JOURNAL, JSON.stringify(issuances), JSON.stringify(audits)),
      ISSUANCE_CONSTRAINTS,
    );
  }
}
