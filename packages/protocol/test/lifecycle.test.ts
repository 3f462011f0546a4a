import { describe, expect, it } from '@jest/globals';
import { SANDBOX_STATES, SandboxState, canTransition, isTerminalState } from '../src/index.js';

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
});
