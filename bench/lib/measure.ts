/** Small measurement helpers shared by the benchmark suites. */
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

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

/** Prints a table of verdicts, writes them to bench/results/<suite>.json, returns whether all passed. */
export function report(suite: string, verdicts: readonly Verdict[]): boolean {
  for (const v of verdicts) {
    console.log(
      `${v.pass ? 'PASS' : 'FAIL'}  ${v.metric.padEnd(56)} ${v.value.toFixed(3).padStart(10)} ${v.unit.padEnd(8)} target ${v.target}`,
    );
  }
  const dir = path.resolve('bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, `${suite}.json`),
    `${JSON.stringify({ suite, at: new Date().toISOString(), verdicts }, null, 2)}\n`,
  );
  return verdicts.every((v) => v.pass);
}

/**
 * The command line of a suite: the measurements named as arguments (all when none),
 * exit 2 for an unknown name, else the report's verdict as the exit code.
 */
export async function runSuite(
  suite: string,
  known: readonly string[],
  runAll: (wanted: readonly string[]) => Promise<Verdict[]>,
): Promise<void> {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    console.error(`unknown measurement ${unknown.join(', ')}; known: ${known.join(', ')}`);
    process.exitCode = 2;
    return;
  }
  const verdicts = await runAll(wanted);
  console.log('');
  process.exitCode = report(suite, verdicts) ? 0 : 1;
}
