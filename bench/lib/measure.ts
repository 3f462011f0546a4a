/** Small measurement helpers shared by the benchmark suites (running a suite: suite.ts). */

export interface Sample {
  readonly name: string;
  /** Nanoseconds per operation (median of rounds). */
  readonly nsPerOp: number;
}

/** Runs `op` in rounds after a warm-up and returns the median nanoseconds per operation. */
export function timeSync(name: string, op: (i: number) => unknown, iterations = 20_000, rounds = 7): Sample {
  for (let i = 0; i < Math.min(iterations, 2000); i++) op(i);
  const perRound: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) op(i);
    perRound.push(Number(process.hrtime.bigint() - started) / iterations);
  }
  return { name, nsPerOp: median(perRound) };
}

/** The same for asynchronous operations run one after another. */
export async function timeAsync(
  name: string,
  op: (i: number) => Promise<unknown>,
  iterations = 200,
  rounds = 5,
): Promise<Sample> {
  for (let i = 0; i < Math.min(iterations, 20); i++) await op(i);
  const perRound: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await op(i);
    perRound.push(Number(process.hrtime.bigint() - started) / iterations);
  }
  return { name, nsPerOp: median(perRound) };
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** The value below which `p` percent of `values` lie (nearest rank); NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] ?? Number.NaN;
}

/** Nanoseconds taken by one run of `op`. */
export async function durationNs(op: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await op();
  return Number(process.hrtime.bigint() - started);
}

export interface Verdict {
  readonly metric: string;
  readonly value: number;
  readonly unit: string;
  readonly target: string;
  readonly pass: boolean;
}

/** A number shown for context (a floor, a percentile): never fails the run. */
export function info(metric: string, value: number, unit: string, target = '(report)'): Verdict {
  return { metric, value, unit, target, pass: true };
}

/** A verdict that passes when `value` ≤ `limit`. */
export function atMost(metric: string, value: number, unit: string, limit: number): Verdict {
  return { metric, value, unit, target: `≤ ${limit} ${unit}`, pass: value <= limit };
}

/** A verdict that passes when `value` ≥ `limit`. */
export function atLeast(metric: string, value: number, unit: string, limit: number): Verdict {
  return { metric, value, unit, target: `≥ ${limit} ${unit}`, pass: value >= limit };
}
