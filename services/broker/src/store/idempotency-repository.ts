// Idempotency-Key records, one per (tenant, principal, key). The primary key
// decides which of several concurrent requests with one key runs: the first
// insert wins, the others read its row. `status` stays NULL while the winner
// runs; the finished response is stored as ciphertext (it holds a token).
import type { IdempotencyRecord, PrismaClient } from './generated/client.js';
import { guard, isUniqueViolation, toSbxError } from './db-errors.js';

export type IdempotencyRecordRow = IdempotencyRecord;

export interface IdempotencyKeyRef {
  readonly tenantId: string;
  readonly principalId: string;
  readonly key: string;
}

export interface NewIdempotencyClaim extends IdempotencyKeyRef {
  readonly requestHash: string;
  /** When an unfinished claim (its holder died) may be taken over. */
  readonly expiresAt: Date;
  /** The broker instance that runs the request (taken over early once it is known dead). */
  readonly holderId?: string;
}

export type ClaimResult =
  { readonly claimed: true } | { readonly claimed: false; readonly existing: IdempotencyRecordRow };

function where(ref: IdempotencyKeyRef) {
  return {
    tenantId_principalId_key: { tenantId: ref.tenantId, principalId: ref.principalId, key: ref.key },
  };
}

export class IdempotencyRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Claims the key for this request, or returns the row of whoever holds it. */
  async claim(input: NewIdempotencyClaim): Promise<ClaimResult> {
    try {
      await this.prisma.idempotencyRecord.create({ data: { ...input } });
      return { claimed: true };
    } catch (err) {
      if (!isUniqueViolation(err)) throw toSbxError(err, 'claim idempotency key');
    }
    const existing = await this.find(input);
    // Deleted between our insert and our read: the holder gave up; claim again.
    return existing === null ? this.claim(input) : { claimed: false, existing };
  }

  find(ref: IdempotencyKeyRef): Promise<IdempotencyRecordRow | null> {
    return guard('find idempotency key', () =>
      this.prisma.idempotencyRecord.findUnique({ where: where(ref) }),
    );
  }

  /** Stores the finished response of a claimed key, kept until `expiresAt`. */
  async complete(
    ref: IdempotencyKeyRef,
    status: number,
    responseCipher: Uint8Array<ArrayBuffer>,
    expiresAt: Date,
  ): Promise<void> {
    await guard('complete idempotency key', () =>
      this.prisma.idempotencyRecord.updateMany({
        where: { ...ref, status: null },
        data: { status, responseCipher, expiresAt },
      }),
    );
  }

  /** Frees a key: its request failed (so a retry may run it) or its record expired. */
  async remove(ref: IdempotencyKeyRef, onlyIf: { expiredBefore?: Date } = {}): Promise<boolean> {
    const { count } = await guard('remove idempotency key', () =>
      this.prisma.idempotencyRecord.deleteMany({
        where: {
          ...ref,
          ...(onlyIf.expiredBefore === undefined ? {} : { expiresAt: { lte: onlyIf.expiredBefore } }),
        },
      }),
    );
    return count > 0;
  }

  /** Frees an unfinished claim of `holderId` (a dead instance); false if it finished or moved. */
  async removeAbandoned(ref: IdempotencyKeyRef, holderId: string): Promise<boolean> {
    const { count } = await guard('take over idempotency key', () =>
      this.prisma.idempotencyRecord.deleteMany({ where: { ...ref, holderId, status: null } }),
    );
    return count > 0;
  }

  /** Deletes records that expired before `at`; returns how many. */
  async purgeExpired(at: Date = new Date()): Promise<number> {
    const { count } = await guard('purge idempotency keys', () =>
      this.prisma.idempotencyRecord.deleteMany({ where: { expiresAt: { lte: at } } }),
    );
    return count;
  }
}
