// The lease reaper's guard against a wall clock that jumps forward (docs/lifecycle.md,
// "Clock jumps"). Leases are deadlines on the wall clock: jumped 10 minutes ahead (an NTP
// step, a VM restored or woken from sleep, an operator's `date -s`), every lease with less
// than 10 minutes left would look expired at once, and their sandboxes would go idle and
// then be suspended although their holders heartbeat on time.
//
// The guard reads the wall clock next to a monotonic one (which never jumps). When the
// wall clock advanced more than the monotonic clock did, by more than `toleranceMs`, the
// difference is a jump and is held back: the reaper's time is `wall − held` for `holdMs`
// of real time after the jump (by default a lease and its idle period), so every lease
// granted before the jump runs its full length in real time, and its holder has that long
// to heartbeat (which grants a new lease on the new wall clock). After the hold, the
// reaper follows the wall clock again; by then every lease from before the jump has either
// been renewed or run out for real. A backward jump needs no guard (deadlines only come
// later) and cancels held time first.
import type { Logger } from '@sbx/service-kit';

/** Wall-clock jumps up to this much are ordinary drift and not held back. */
export const DEFAULT_JUMP_TOLERANCE_MS = 5_000;

export interface ClockJumpGuardOptions {
  /** The wall clock (milliseconds since the epoch): the broker's clock. */
  readonly clock: () => number;
  /** A clock that only moves forward with real time (performance.now). */
  readonly monotonic: () => number;
  /** Real time a jump is held back for after it was seen. */
  readonly holdMs: number;
  readonly toleranceMs?: number;
  readonly logger?: Pick<Logger, 'warn' | 'info'>;
}

export interface ClockJumpGuard {
  /** The wall clock, less any forward jump still held back. */
  readonly now: () => number;
  /** Milliseconds currently held back (0 when none). */
  held(): number;
}

export function createClockJumpGuard(options: ClockJumpGuardOptions): ClockJumpGuard {
  const tolerance = options.toleranceMs ?? DEFAULT_JUMP_TOLERANCE_MS;
  let last: { wall: number; mono: number } | undefined;
  let held = 0;
  let heldUntil = 0;

  const sample = (): number => {
    const wall = options.clock();
    const mono = options.monotonic();
    if (last !== undefined) {
      const jump = wall - last.wall - (mono - last.mono);
      if (jump > tolerance) {
        held += jump;
        heldUntil = mono + options.holdMs;
        options.logger?.warn(
          { jump_ms: jump, held_ms: held, hold_ms: options.holdMs },
          'wall clock jumped forward: lease deadlines are judged in real time until every lease had its full length',
        );
      } else if (jump < -tolerance && held > 0) {
        held = Math.max(0, held + jump);
      }
    }
    last = { wall, mono };
    if (held > 0 && mono >= heldUntil) {
      options.logger?.info(
        { held_ms: held },
        'clock jump no longer held back: the reaper follows the wall clock',
      );
      held = 0;
    }
    return wall - held;
  };

  sample(); // the reference: a jump before the reaper's first round is a jump too
  return {
    now: sample,
    held: () => held,
  };
}
