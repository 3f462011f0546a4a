// The lease reaper's clock-jump guard (domain/lifecycle/clock-jump.ts; docs/lifecycle.md
// "Clock jumps"). Found by reliability/broker-faults/clock-jump.test.ts: one reaper round
// after a 10-minute jump moved every heartbeating sandbox to idle and then to suspended.
import { describe, expect, it } from '@jest/globals';
import { createClockJumpGuard } from '../../src/domain/lifecycle/clock-jump.js';

const HOLD_MS = 120_000;

function clocks() {
  const at = { wall: 1_700_000_000_000, mono: 5_000 };
  const guard = createClockJumpGuard({
    clock: () => at.wall,
    monotonic: () => at.mono,
    holdMs: HOLD_MS,
  });
  return {
    guard,
    pass(ms: number) {
      at.wall += ms;
      at.mono += ms;
    },
    jump(ms: number) {
      at.wall += ms;
    },
    wall: () => at.wall,
  };
}

describe('the reaper clock-jump guard', () => {
  it('follows the wall clock while it moves with real time, drift within the tolerance included', () => {
    const c = clocks();
    c.pass(15_000);
    expect(c.guard.now()).toBe(c.wall());
    c.jump(4_000);
    expect(c.guard.now()).toBe(c.wall());
    expect(c.guard.held()).toBe(0);
  });

  it('holds a forward jump back for the hold in real time, then follows the wall clock', () => {
    const c = clocks();
    c.jump(600_000);
    expect(c.guard.now()).toBe(c.wall() - 600_000);
    c.pass(HOLD_MS - 1);
    expect(c.guard.now()).toBe(c.wall() - 600_000);
    c.pass(1);
    expect(c.guard.now()).toBe(c.wall());
  });

  it('adds a second jump and restarts the hold; a backward jump gives held time back first', () => {
    const c = clocks();
    c.jump(600_000);
    c.guard.now();
    c.pass(HOLD_MS / 2);
    c.jump(60_000);
    expect(c.guard.held()).toBe(600_000); // the second one is seen at the next reading
    expect(c.guard.now()).toBe(c.wall() - 660_000);
    c.pass(HOLD_MS / 2);
    expect(c.guard.now()).toBe(c.wall() - 660_000); // the second jump restarted the hold
    c.jump(-100_000);
    expect(c.guard.now()).toBe(c.wall() - 560_000);
    c.pass(HOLD_MS / 2);
    expect(c.guard.now()).toBe(c.wall());
  });

  it('sees a jump made before its first reading', () => {
    const c = clocks();
    c.jump(600_000);
    c.pass(1_000);
    expect(c.guard.now()).toBe(c.wall() - 600_000);
  });
});
