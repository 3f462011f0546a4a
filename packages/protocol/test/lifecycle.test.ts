import { describe, expect, it } from '@jest/globals';
import {
  SANDBOX_STATES,
  SANDBOX_TRANSITIONS_INTO,
  SandboxState,
  TERMINAL_STATES,
  canTransition,
  isTerminalState,
} from '../src/index.js';

describe('sandbox lifecycle', () => {
  it('parses the six states and rejects others', () => {
    for (const state of SANDBOX_STATES) expect(SandboxState.parse(state)).toBe(state);
    expect(SandboxState.safeParse('running').success).toBe(false);
  });

  it('allows exactly the transitions of the table', () => {
    const allowed = new Set([
      'provisioning>active',
      'provisioning>failed',
      'provisioning>terminated',
      'active>idle',
      'active>suspended',
      'active>terminated',
      'active>failed',
      'idle>active',
      'idle>suspended',
      'idle>terminated',
      'idle>failed',
      'suspended>active',
      'suspended>terminated',
      'suspended>failed',
      'failed>terminated',
    ]);
    for (const from of SANDBOX_STATES) {
      for (const to of SANDBOX_STATES) {
        expect([`${from}>${to}`, canTransition(from, to)]).toEqual([
          `${from}>${to}`,
          allowed.has(`${from}>${to}`),
        ]);
      }
    }
  });

  it('treats terminated as final and a state as no transition to itself', () => {
    for (const to of SANDBOX_STATES) expect(canTransition('terminated', to)).toBe(false);
    expect(canTransition('active', 'active')).toBe(false);
    expect(canTransition('suspended', 'idle')).toBe(false);
    expect(isTerminalState('failed')).toBe(true);
    expect(isTerminalState('suspended')).toBe(false);
  });

  it('reads the table the other way without losing or adding a move', () => {
    for (const from of SANDBOX_STATES) {
      for (const to of SANDBOX_STATES) {
        expect([`${from}>${to}`, SANDBOX_TRANSITIONS_INTO[to].includes(from)]).toEqual([
          `${from}>${to}`,
          canTransition(from, to),
        ]);
      }
    }
    expect(SANDBOX_TRANSITIONS_INTO.provisioning).toEqual([]);
    expect(SANDBOX_TRANSITIONS_INTO.terminated).toContain('failed');
  });

  it('never leads out of the terminal states into a live one', () => {
    expect(TERMINAL_STATES.toSorted()).toEqual(SANDBOX_STATES.filter(isTerminalState).toSorted());
    const exits = TERMINAL_STATES.flatMap((from) => SANDBOX_STATES.filter((to) => canTransition(from, to)));
    expect(exits.filter((to) => !isTerminalState(to))).toEqual([]);
  });
});
