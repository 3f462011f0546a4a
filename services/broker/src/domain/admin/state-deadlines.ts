// Every non-final state has a deadline and a forced way out (docs/admin.md,
// "Deadlines"). They are the lease reaper's timers read per sandbox, so what
// `recover` does early for one sandbox is what the reaper would do on its own,
// and a sandbox the reaper keeps failing on (a provider error, a stuck lock)
// can be pushed by an operator who sees it in the inventory.
import { SANDBOX_STATES, isTerminalState, type SandboxState } from '@sbx/protocol';
import type { LifecycleTimers } from '../lifecycle/lifecycle-settings.js';
import type { Sandbox } from '../../store/generated/client.js';

export interface ForcedMove {
  readonly to: SandboxState;
  readonly provider: 'stop' | 'destroy' | 'none';
  /** provider-first: the row changes once the provider acted; state-first: the row first, provider best effort. */
  readonly order: 'provider-first' | 'state-first';
  /** provider-first: the states the change still applies from after the provider call. */
  readonly afterProvider?: readonly SandboxState[];
  readonly reason: string;
  readonly failureReason?: string;
}

export interface StateDeadline {
  readonly at: Date;
  readonly move: ForcedMove;
}

const NOT_FINAL: readonly SandboxState[] = SANDBOX_STATES.filter((state) => !isTerminalState(state));

/** Force-terminate: destroy at the provider, then end the sandbox from whatever state it is in. */
export const TERMINATE: ForcedMove = {
  to: 'terminated',
  provider: 'destroy',
  order: 'provider-first',
  afterProvider: NOT_FINAL,
  reason: 'admin_terminate',
};

const HARD_TTL: ForcedMove = { ...TERMINATE, reason: 'hard_ttl' };

const plus = (at: Date, ms: number): Date => new Date(at.getTime() + ms);

type Row = Pick<
  Sandbox,
  'state' | 'createdAt' | 'lastHeartbeatAt' | 'leaseExpiresAt' | 'hardExpiresAt' | 'failedAt'
>;

/** Per state, its deadline and way out; a Record, so a new state must say what ends it. */
const DEADLINES: Record<SandboxState, (sandbox: Row, timers: LifecycleTimers) => StateDeadline | null> = {
  provisioning: (sandbox, timers) => {
    const heard = Math.max(sandbox.createdAt.getTime(), sandbox.lastHeartbeatAt.getTime());
    const seconds = Math.round(timers.provisioningTimeoutMs / 1000);
    return {
      at: new Date(heard + timers.provisioningTimeoutMs),
      move: {
        to: 'failed',
        provider: 'destroy',
        order: 'state-first',
        reason: 'provisioning_timeout',
        failureReason: `provisioning did not finish within ${seconds} s`,
      },
    };
  },
  active: (sandbox) => ({
    at: sandbox.leaseExpiresAt,
    move: { to: 'idle', provider: 'none', order: 'state-first', reason: 'lease_expired' },
  }),
  idle: (sandbox, timers) => ({
    at: plus(sandbox.leaseExpiresAt, timers.suspendAfterIdleMs),
    move: {
      to: 'suspended',
      provider: 'stop',
      order: 'provider-first',
      afterProvider: ['idle', 'active'],
      reason: 'lease_expired',
    },
  }),
  suspended: (sandbox) => ({ at: sandbox.hardExpiresAt, move: HARD_TTL }),
  failed: (sandbox, timers) => ({
    at: plus(sandbox.failedAt ?? sandbox.createdAt, timers.failedRetentionMs),
    move: { ...TERMINATE, afterProvider: ['failed'], reason: 'failed_retention' },
  }),
  // Final: there is no way out.
  terminated: () => null,
};

/** The sandbox's next forced way out: its state's deadline, or the hard TTL when that comes first. */
export function deadlineOf(sandbox: Row, timers: LifecycleTimers): StateDeadline | null {
  const own = DEADLINES[sandbox.state](sandbox, timers);
  if (own === null || sandbox.state === 'failed') return own;
  return sandbox.hardExpiresAt < own.at ? { at: sandbox.hardExpiresAt, move: HARD_TTL } : own;
}
