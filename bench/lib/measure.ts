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
  /**
   * Cells of the summary table (scripts/run-bench.mjs → bench/results/latest.md), already
   * formatted. Present, the line is a row of that table even when it has no target (a
   * headline reported for context); absent, only lines with a target are rows.
   */
  readonly table?: TableCells;
}

export interface TableCells {
  /** The subject's own number(s), e.g. `12.1 ms`. */
  readonly value?: string;
  /** The floor's, measured in the same run. */
  readonly floor?: string;
  /** Subject against floor, e.g. `1.22×`. */
  readonly ratio?: string;
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

/** A number for the summary table: three significant digits, no exponent. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value) || Number.isInteger(value)) return String(value);
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : Math.abs(value) >= 1 ? 2 : 3;
  return value.toFixed(digits);
}

/** A value and its unit as the table shows it (`12.1 ms`, `1.22×`). */
export function formatValue(value: number, unit: string): string {
  if (unit === '×' || unit === '%') return `${formatNumber(value)}${unit}`;
  return unit === '' ? formatNumber(value) : `${formatNumber(value)} ${unit}`;
}

/** What a ratio verdict compares: the subject's and the floor's values, in `unit`. */
export interface Compared {
  readonly subject: number;
  readonly floor: number;
  readonly unit: string;
}

function ratioCells(compared: Compared, ratio: number): TableCells {
  return {
    value: formatValue(compared.subject, compared.unit),
    floor: formatValue(compared.floor, compared.unit),
    ratio: formatValue(ratio, '×'),
  };
}

/**
 * subject / floor ≤ `limit` (latencies, CPU): the verdict's value is the ratio, and the
 * summary table shows both measured values beside it.
 */
export function ratioAtMost(metric: string, compared: Compared, limit: number): Verdict {
  const ratio = compared.subject / compared.floor;
  return { ...atMost(metric, ratio, '×', limit), table: ratioCells(compared, ratio) };
}

/** subject / floor ≥ `limit` (throughputs), shown like `ratioAtMost`. */
export function ratioAtLeast(metric: string, compared: Compared, limit: number): Verdict {
  const ratio = compared.subject / compared.floor;
  return { ...atLeast(metric, ratio, '×', limit), table: ratioCells(compared, ratio) };
}

/** A report-only line that is also a row of the summary table (a headline without a target). */
export function headline(verdict: Verdict, cells: TableCells = {}): Verdict {
  return { ...verdict, table: { value: formatValue(verdict.value, verdict.unit), ...cells } };
}
