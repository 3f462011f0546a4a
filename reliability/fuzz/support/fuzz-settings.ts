// How much the fuzz suites run and from which seed (reliability/README.md, "fuzz").
//
//   SBX_FUZZ_SEED=<n>     replays a run: every input is derived from the seed and its index
//   SBX_FUZZ_CASE=<i>     with the seed, sends input #i alone (what a failure report names)
//   SBX_RELIABILITY=long  the long form: ten times the bounded form's inputs
import * as fc from 'fast-check';

export const LONG = process.env['SBX_RELIABILITY'] === 'long';

function seedFromEnvironment(): number {
  const given = process.env['SBX_FUZZ_SEED'];
  if (given === undefined || given === '') return Math.floor(Math.random() * 0x7fffffff);
  const seed = Number(given);
  if (!Number.isSafeInteger(seed)) throw new Error(`SBX_FUZZ_SEED must be an integer, not "${given}"`);
  return seed;
}

/** One seed per test process, named in every suite's title and failure report. */
export const SEED = seedFromEnvironment();

/** The one input to replay (SBX_FUZZ_CASE), or none. */
export const ONLY_CASE = ((): number | undefined => {
  const given = process.env['SBX_FUZZ_CASE'];
  return given === undefined || given === '' ? undefined : Number(given);
})();

/**
 * Longest an input may take, answer included: generous (a loaded CI machine running both
 * targets and the generator on two cores) but finite, and reported as a hang beyond it.
 */
export const CEILING_MS = 20_000;

/** The bounded form's count, or ten times it in the long form. */
export const inputs = (bounded: number): number => (LONG ? bounded * 10 : bounded);

/** The seed of input `index` of a stream: independent of every other input, so any one replays alone. */
export function caseSeed(stream: string, index: number): number {
  let hash = SEED ^ 0x9e3779b9;
  for (const char of `${stream}:${index}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return hash >>> 0;
}

/** Input `index` of `stream`, drawn from `arbitrary` by its own seed. */
export function draw<T>(arbitrary: fc.Arbitrary<T>, stream: string, index: number): T {
  const [value] = fc.sample(arbitrary, { seed: caseSeed(stream, index), numRuns: 1 });
  return value as T;
}

/** The indexes to run: all of them, or the one SBX_FUZZ_CASE names. */
export function indexes(count: number): number[] {
  if (ONLY_CASE !== undefined) return [ONLY_CASE];
  return Array.from({ length: count }, (_, i) => i);
}

/** How to replay a failing input, for failure messages. */
export const replay = (index: number): string => `replay: SBX_FUZZ_SEED=${SEED} SBX_FUZZ_CASE=${index}`;
