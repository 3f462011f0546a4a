// The sandbox state machine as the store applies it. The machine is the protocol's
// (SANDBOX_TRANSITIONS); everything here is derived from it or keyed by its states.
import {
  canTransition,
  SANDBOX_STATES,
  SANDBOX_TRANSITIONS_INTO,
  SbxError,
  TERMINAL_STATES,
} from '@sbx/protocol';
import type { Prisma, Sandbox, SandboxState } from './generated/client.js';

/** Sandboxes that no longer serve their scope; they take no further transition but cleanup. */
export const FINAL_STATES: readonly SandboxState[] = TERMINAL_STATES;

/** Whether an agent runs (or is coming up) in each state; a Record, so a new state must say. */
const AGENT_UP = {
  provisioning: true,
  active: true,
  idle: true,
  suspended: false,
  terminated: false,
  failed: false,
} as const satisfies Record<SandboxState, boolean>;

/** Sandboxes whose agent runs or is coming up: what a tenant's quota counts. */
export const RUNNING_STATES: readonly SandboxState[] = SANDBOX_STATES.filter((state) => AGENT_UP[state]);

/**
 * For each target state, the states a sandbox may move to it from. Typed with
 * the database's enum, so the assignment also fails to compile when the schema
 * and the protocol disagree on the states themselves.
 */
export const ALLOWED_FROM: Readonly<Record<SandboxState, readonly SandboxState[]>> = SANDBOX_TRANSITIONS_INTO;

/** The column that records when a sandbox entered each state (`createdAt` for provisioning). */
export const STATE_STAMPS = {
  provisioning: undefined,
  active: 'activeAt',
  idle: 'idleAt',
  suspended: 'suspendedAt',
  terminated: 'terminatedAt',
  failed: 'failedAt',
} as const satisfies Record<SandboxState, keyof Sandbox | undefined>;

/**
 * What entering `to` writes, whichever repository moves the sandbox: the state,
 * its timestamp, `live` cleared by a final state (freeing the scope), and the
 * dataplane forgotten by `suspended` (its agent is gone; a resume records
 * where the new one listens).
 */
export function enteringState(to: SandboxState, at: Date): Prisma.SandboxUpdateManyMutationInput {
  const stamp = STATE_STAMPS[to];
  return {
    state: to,
    ...(stamp === undefined ? {} : { [stamp]: at }),
    ...(FINAL_STATES.includes(to) ? { live: null } : {}),
    ...(to === 'suspended' ? { httpBaseUrl: null, wsBaseUrl: null } : {}),
  };
}

/** A move the protocol forbids is the caller's bug, not a race: INTERNAL, and nothing is written. */
export function assertMoves(from: readonly SandboxState[], to: SandboxState): void {
  const illegal = from.filter((state) => !canTransition(state, to));
  if (illegal.length > 0) {
    throw new SbxError('INTERNAL', `the lifecycle does not move ${illegal.join(', ')} to ${to}`, {
      details: { from: illegal, to },
    });
  }
}
