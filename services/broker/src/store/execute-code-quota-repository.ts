// execute_code's circuit breakers (docs/execute-code.md "Quotas"): one counter row per
// dimension, subject and window in Postgres, so every broker replica shares them and
// they survive a restart.
import type { CapDimension } from '@sbx/protocol';
import type { PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';

/** One cap to take a unit from: the counter `(dimension, subject, windowStart)` may reach `cap`. */
export interface QuotaCounter {
  readonly dimension: CapDimension;
  readonly subject: string;
  readonly windowStart: Date;
  readonly cap: number;
}

export type QuotaTake =
  { readonly taken: true } | { readonly taken: false; readonly dimension: CapDimension };

/** Thrown inside the transaction to undo the counters already taken. */
class CapReached extends Error {
  constructor(readonly dimension: CapDimension) {
    super(`cap ${dimension} reached`);
  }
}

// Calls of one tenant queue on its counter row: a burst waits its turn instead of failing.
const TRANSACTION_WAITS = { maxWait: 15_000, timeout: 15_000 };

export class ExecuteCodeQuotaRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Takes one unit from every counter, or from none: each increment is one statement
   * that only succeeds while `count < cap` (the row lock makes concurrent calls queue),
   * and a counter at its cap rolls back the ones taken before it. A cap of 0 never
   * inserts, so it refuses everything.
   */
  async take(counters: readonly QuotaCounter[]): Promise<QuotaTake> {
    try {
      await guard('take execute_code quota', () =>
        this.prisma.$transaction(async (tx) => {
          for (const counter of counters) {
            const rows = await tx.$queryRaw<{ count: number }[]>`
              INSERT INTO "execute_code_counters" ("dimension", "subject", "window_start", "count")
              SELECT ${counter.dimension}, ${counter.subject}, ${counter.windowStart}, 1
              WHERE ${counter.cap}::int > 0
              ON CONFLICT ("dimension", "subject", "window_start")
              DO UPDATE SET "count" = "execute_code_counters"."count" + 1
              WHERE "execute_code_counters"."count" < ${counter.cap}::int
              RETURNING "count"`;
            if (rows.length === 0) throw new CapReached(counter.dimension);
          }
        }, TRANSACTION_WAITS),
      );
      return { taken: true };
    } catch (err) {
      const reached = capReachedIn(err);
      if (reached !== undefined) return { taken: false, dimension: reached.dimension };
      throw err;
    }
  }

  /** The current count of one counter (0 when it has no row). */
  async count(counter: Omit<QuotaCounter, 'cap'>): Promise<number> {
    const row = await guard('read execute_code quota', () =>
      this.prisma.executeCodeCounter.findUnique({
        where: {
          dimension_subject_windowStart: {
            dimension: counter.dimension,
            subject: counter.subject,
            windowStart: counter.windowStart,
          },
        },
        select: { count: true },
      }),
    );
    return row?.count ?? 0;
  }

  /** Drops windows that ended before `before` (they can never be taken from again). */
  async purgeBefore(before: Date): Promise<number> {
    const result = await guard('purge execute_code counters', () =>
      this.prisma.executeCodeCounter.deleteMany({ where: { windowStart: { lt: before } } }),
    );
    return result.count;
  }
}

/** `guard` may wrap the error it was given; the cap is found through the cause chain. */
function capReachedIn(err: unknown): CapReached | undefined {
  for (let current: unknown = err, depth = 0; current !== undefined && depth < 5; depth++) {
    if (current instanceof CapReached) return current;
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}
