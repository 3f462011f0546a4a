// execute_code's circuit breakers (docs/execute-code.md "Quotas"): one counter row per
// dimension, subject and window in Postgres, so every broker replica shares them and
// they survive a restart.
import { CapDimension } from '@sbx/protocol';
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

export class ExecuteCodeQuotaRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Takes `units` (default 1) from both counters, or from none, in one statement: the
   * database function `execute_code_take_units` (migration *_execute_code_take_units)
   * increments each only while `count + units <= cap` (the row lock makes concurrent calls
   * queue) and undoes the first when the second refuses. A cap of 0 refuses everything.
   */
  async take(counters: readonly [QuotaCounter, QuotaCounter], units = 1): Promise<QuotaTake> {
    const [first, second] = counters;
    // A counter is not worth a disk flush per call: its commit returns before the WAL is
    // flushed (a database crash may forget the last increments, never double them).
    // `set_config(…, true)` holds for the statement's own implicit transaction, so the take
    // is one round trip.
    const rows = await guard(
      'take execute_code quota',
      () =>
        this.prisma.$queryRaw<{ refused: string | null }[]>`
        SELECT set_config('synchronous_commit', 'off', true) AS "commit", "execute_code_take_units"(
          ${first.dimension}, ${first.subject}, ${first.windowStart}::timestamptz, ${first.cap}::int,
          ${second.dimension}, ${second.subject}, ${second.windowStart}::timestamptz, ${second.cap}::int,
          ${units}::int
        ) AS "refused"`,
    );
    const refused = rows[0]?.refused ?? null;
    if (refused === null) return { taken: true };
    return { taken: false, dimension: CapDimension.parse(refused) };
  }

  /** Returns `units` to both counters (taken ahead and not used); never below zero. */
  async giveBack(counters: readonly [QuotaCounter, QuotaCounter], units = 1): Promise<void> {
    const [first, second] = counters;
    await guard(
      'give back execute_code quota',
      () =>
        this.prisma.$executeRaw`
        WITH "commit" AS (SELECT set_config('synchronous_commit', 'off', true))
        UPDATE "execute_code_counters" SET "count" = GREATEST("count" - ${units}::int, 0)
        FROM "commit"
        WHERE ("dimension", "subject", "window_start") IN (
          (${first.dimension}, ${first.subject}, ${first.windowStart}::timestamptz),
          (${second.dimension}, ${second.subject}, ${second.windowStart}::timestamptz))`,
    );
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
