import { z } from 'zod';

/** Lifecycle states of a sandbox binding (docs/lifecycle.md#states). */
export const SANDBOX_STATES = [
  'provisioning',
  'active',
  'idle',
  'suspended',
  'terminated',
  'failed',
] as const;
export const SandboxState = z.enum(SANDBOX_STATES);
export type SandboxState = z.infer<typeof SandboxState>;

/**
 * The allowed transitions, from → to. A state is not a transition to itself:
 * `canTransition('active', 'active')` is false and callers treat it as a no-op.
 * `terminated` is final; `failed` can only be cleaned up into `terminated`.
 */
export const SANDBOX_TRANSITIONS = {
  provisioning: ['active', 'failed', 'terminated'],
  active: ['idle', 'suspended', 'terminated', 'failed'],
  idle: ['active', 'suspended', 'terminated', 'failed'],
  suspended: ['active', 'terminated', 'failed'],
  terminated: [],
  failed: ['terminated'],
} as const satisfies Record<SandboxState, readonly SandboxState[]>;

export function canTransition(from: SandboxState, to: SandboxState): boolean {
  const allowed: readonly SandboxState[] = SANDBOX_TRANSITIONS[from];
  return allowed.includes(to);
}

function statesInto(to: SandboxState): readonly SandboxState[] {
  return SANDBOX_STATES.filter((from) => canTransition(from, to));
}

/**
 * The same table read the other way, to → the states it may be entered from:
 * what a store's conditional update (`WHERE state IN …`) needs. Derived, so the
 * two can never disagree; `satisfies` makes a new state need its line here.
 */
export const SANDBOX_TRANSITIONS_INTO = {
  provisioning: statesInto('provisioning'),
  active: statesInto('active'),
  idle: statesInto('idle'),
  suspended: statesInto('suspended'),
  terminated: statesInto('terminated'),
  failed: statesInto('failed'),
} as const satisfies Record<SandboxState, readonly SandboxState[]>;

/** States from which no further work is possible (no token is issued for them). */
export const TERMINAL_STATES = ['terminated', 'failed'] as const satisfies readonly SandboxState[];

/** Whether the state is one of {@link TERMINAL_STATES}. */
export function isTerminalState(state: SandboxState): boolean {
  const terminal: readonly SandboxState[] = TERMINAL_STATES;
  return terminal.includes(state);
}
