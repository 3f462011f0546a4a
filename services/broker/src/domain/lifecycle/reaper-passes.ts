// What the reaper does each round, in order: one pass per timer. Hard TTL
// comes first so a sandbox past it is destroyed rather than idled; the other
// passes leave hard-TTL cases alone (`hardExpiresFrom`), so no sandbox is
// acted on twice in a round.
import { canTransition, isTerminalState, SANDBOX_STATES, SbxError, type SandboxState } from '@sbx/protocol';
import type { DueFilter } from '../../store/reaper-repository.js';
import type { LifecycleReason } from './lifecycle-audit.js';
import type { LifecycleTimers } from './lifecycle-settings.js';

export interface ReaperPass {
  readonly reason: LifecycleReason;
  readonly to: SandboxState;
  readonly due: (now: Date) => DueFilter;
  readonly provider: 'stop' | 'destroy' | 'none';
  /**
   * provider-first: the state changes only once the provider call succeeded,
   * so a failure leaves the sandbox due for the next round. state-first: the
   * state changes (freeing the scope), then the provider call is best effort.
   */
  readonly order: 'provider-first' | 'state-first';
  /**
   * provider-first only: the states the change still applies from once the
   * provider has acted, whatever renewed the lease meanwhile. The state must
   * say what the provider did, even to a sandbox resumed under the reaper.
   */
  readonly afterProvider?: readonly SandboxState[];
  readonly failureReason?: string;
}

const NOT_FINAL: readonly SandboxState[] = SANDBOX_STATES.filter((state) => !isTerminalState(state));

function ago(now: Date, ms: number): Date {
  return new Date(now.getTime() - ms);
}

export function reaperPasses(timers: LifecycleTimers): readonly ReaperPass[] {
  const passes: ReaperPass[] = [
    {
      reason: 'hard_ttl',
      to: 'terminated',
      provider: 'destroy',
      order: 'provider-first',
      afterProvider: NOT_FINAL,
      due: (now) => ({ states: NOT_FINAL, hardExpiredBefore: now }),
    },
    {
      reason: 'provisioning_timeout',
      to: 'failed',
      provider: 'destroy',
      order: 'state-first',
      failureReason: `provisioning did not finish within ${Math.round(timers.provisioningTimeoutMs / 1000)} s`,
      due: (now) => ({
        states: ['provisioning'],
        silentSince: ago(now, timers.provisioningTimeoutMs),
        hardExpiresFrom: now,
      }),
    },
    {
      reason: 'lease_expired',
      to: 'idle',
      provider: 'none',
      order: 'state-first',
      due: (now) => ({ states: ['active'], leaseExpiredBefore: now, hardExpiresFrom: now }),
    },
    {
      reason: 'lease_expired',
      to: 'suspended',
      provider: 'stop',
      order: 'provider-first',
      // A negotiation may resume an idle sandbox (idle → active, no provider call) while it is being stopped.
      afterProvider: ['idle', 'active'],
      due: (now) => ({
        states: ['idle'],
        leaseExpiredBefore: ago(now, timers.suspendAfterIdleMs),
        hardExpiresFrom: now,
      }),
    },
    {
      reason: 'failed_retention',
      to: 'terminated',
      provider: 'destroy',
      order: 'provider-first',
      afterProvider: ['failed'],
      due: (now) => ({ states: ['failed'], failedBefore: ago(now, timers.failedRetentionMs) }),
    },
  ];
  for (const pass of passes) assertLegal(pass);
  return passes;
}

/** Keeps the passes inside the protocol's state machine. */
function assertLegal(pass: ReaperPass): void {
  for (const from of [...pass.due(new Date()).states, ...(pass.afterProvider ?? [])]) {
    if (!canTransition(from, pass.to)) {
      throw new SbxError('INTERNAL', `reaper pass ${pass.reason} would move ${from} to ${pass.to}`);
    }
  }
}
