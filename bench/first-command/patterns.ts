/**
 * The three arrival patterns of the public sandbox comparisons' "time to first command":
 * `count` operations one after another, started one every 100–200 ms whatever is still
 * running (staggered), and all at once (burst). Each operation is timed from its start to
 * its checked answer; a failure is counted, never retried by the bench (the SDK's own
 * retries are part of what a user sees).
 */
import { durationNs } from '../lib/measure.js';
import { setTimeout as sleep } from 'node:timers/promises';

export type PatternName = 'sequential' | 'staggered' | 'burst';
export const PATTERNS: readonly PatternName[] = ['sequential', 'staggered', 'burst'];

export interface PatternRun {
  readonly pattern: PatternName;
  readonly count: number;
  /** Latencies (ns) of the operations that succeeded. */
  readonly latenciesNs: number[];
  readonly failures: number;
  readonly firstError: string | undefined;
  /** From the first start to the last answer. */
  readonly wallNs: number;
}

/** One operation; `index` is unique within a run (thread names, markers). */
export type Operation = (index: number) => Promise<void>;

const STAGGER_MIN_MS = 100;
const STAGGER_MAX_MS = 200;

/**
 * The gaps between staggered starts: uniform in 100–200 ms from a fixed seed (a small
 * linear congruential generator), so every run and every subject sees the same arrivals.
 */
export function staggerGapsMs(count: number, seed = 20_261_128): number[] {
  let state = seed >>> 0;
  return Array.from({ length: count }, () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return STAGGER_MIN_MS + (state / 2 ** 32) * (STAGGER_MAX_MS - STAGGER_MIN_MS);
  });
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export async function runPattern(pattern: PatternName, count: number, op: Operation): Promise<PatternRun> {
  const latenciesNs: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  const timed = async (index: number): Promise<void> => {
    try {
      latenciesNs.push(await durationNs(() => op(index)));
    } catch (err) {
      failures += 1;
      firstError ??= messageOf(err);
    }
  };
  const started = process.hrtime.bigint();
  if (pattern === 'sequential') {
    for (let i = 0; i < count; i++) await timed(i);
  } else if (pattern === 'burst') {
    await Promise.all(Array.from({ length: count }, (_, i) => timed(i)));
  } else {
    const running: Promise<void>[] = [];
    const gaps = staggerGapsMs(count);
    for (let i = 0; i < count; i++) {
      running.push(timed(i));
      if (i < count - 1) await sleep(gaps[i]);
    }
    await Promise.all(running);
  }
  const wallNs = Number(process.hrtime.bigint() - started);
  return { pattern, count, latenciesNs, failures, firstError, wallNs };
}
