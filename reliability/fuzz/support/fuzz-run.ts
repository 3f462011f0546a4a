// The loop every fuzz suite runs: inputs by index, `concurrency` at a time, each judged;
// the target's memory read after the warm-up batch and after the rest.
import { indexes, replay } from './fuzz-settings.js';
import type { Memory, Target } from './targets.js';

export interface Judged {
  /** How it was answered, for the summary: `401`, `http-layer 400`, `close 1008` … */
  readonly kind: string;
  /** Undefined when the answer is acceptable. */
  readonly problem?: string | undefined;
  /** What was sent, for a failure report. */
  readonly description: string;
}

export interface RunReport {
  readonly inputs: number;
  /** The first failures in full (SBX_FUZZ_KEEP, default 25), then a count of the rest. */
  readonly failures: string[];
  readonly summary: string;
  /** After the warm-up batch and after the rest (absent when one input was replayed). */
  readonly memory?: { readonly warm: Memory; readonly end: Memory };
  readonly ms: number;
}

/**
 * How much the target's heap (after a forced GC) grew from the warm-up to the end, in MiB;
 * 0 when one input was replayed. The tests allow 16 MiB over thousands of inputs: a leak
 * of a few KiB per request shows, while V8's own caches settling does not.
 */
export function heapGrowthMiB(report: RunReport): number {
  if (report.memory === undefined) return 0;
  return (report.memory.end.heapUsed - report.memory.warm.heapUsed) / 2 ** 20;
}

const KEPT_FAILURES = Number(process.env['SBX_FUZZ_KEEP'] ?? 25);

/** Runs `work` over `items`, `concurrency` at a time, in order of start. */
async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

function tally(kinds: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const kind of kinds) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return [...counts]
    .toSorted((a, b) => b[1] - a[1])
    .map(([kind, count]) => `${kind}×${count}`)
    .join(' ');
}

export async function runFuzz(
  target: Target,
  options: { readonly count: number; readonly warmUp: number; readonly concurrency: number },
  one: (index: number) => Promise<Judged>,
): Promise<RunReport> {
  const started = Date.now();
  const failures: string[] = [];
  const kinds: string[] = [];
  let failed = 0;
  const judged = async (index: number): Promise<void> => {
    const { kind, problem, description } = await one(index);
    kinds.push(kind);
    if (problem === undefined) return;
    failed++;
    if (failures.length < KEPT_FAILURES)
      failures.push(`#${index}: ${problem}\n    input: ${description}\n    ${replay(index)}`);
  };
  const all = indexes(options.count);
  await pool(all.slice(0, options.warmUp), options.concurrency, judged);
  const warm = all.length > 1 ? await target.memory() : undefined;
  await pool(all.slice(options.warmUp), options.concurrency, judged);
  const end = all.length > 1 ? await target.memory() : undefined;
  if (failed > failures.length) failures.push(`… and ${failed - failures.length} more failures`);
  return {
    inputs: all.length,
    failures,
    summary: tally(kinds),
    ...(warm === undefined || end === undefined ? {} : { memory: { warm, end } }),
    ms: Date.now() - started,
  };
}
