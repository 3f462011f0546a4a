/** Milliseconds since the epoch; injectable so tests control time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

export function unixSeconds(clock: Clock): number {
  return Math.floor(clock() / 1000);
}

/** The most clock skew a verifier may forgive (seconds). */
export const MAX_CLOCK_TOLERANCE_SECONDS = 30;

export function checkClockTolerance(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_CLOCK_TOLERANCE_SECONDS) {
    throw new RangeError(`clockToleranceSeconds must be an integer from 0 to ${MAX_CLOCK_TOLERANCE_SECONDS}`);
  }
  return seconds;
}
