// Cheap GROUP BY counts for the metrics scrape: sandboxes by state and session
// bindings held or released. Both tables are indexed on what is grouped.
import type { PrismaClient } from './generated/client.js';

export interface StateCounts {
  /** Sandboxes by lifecycle state (states without sandboxes are absent). */
  readonly sandboxes: Readonly<Record<string, number>>;
  /** Session bindings: `held` (live) and `released`. */
  readonly sessions: Readonly<Record<'held' | 'released', number>>;
}

export async function countByState(prisma: PrismaClient): Promise<StateCounts> {
  const [sandboxes, bindings] = await Promise.all([
    prisma.$queryRaw<{ state: string; n: number }[]>`
      SELECT state::text AS state, COUNT(*)::int AS n FROM sandboxes GROUP BY state`,
    prisma.$queryRaw<{ held: boolean; n: number }[]>`
      SELECT (live IS TRUE) AS held, COUNT(*)::int AS n FROM session_bindings GROUP BY 1`,
  ]);
  const sessions = { held: 0, released: 0 };
  for (const row of bindings) sessions[row.held ? 'held' : 'released'] += row.n;
  return { sandboxes: Object.fromEntries(sandboxes.map((row) => [row.state, row.n])), sessions };
}
