// Every state list of the lifecycle domain stays inside the protocol's state
// machine: whatever a reaper pass, the agent-exit handler or the start-up
// reconciliation may move, the protocol allows moving.
import { describe, expect, it } from '@jest/globals';
import { canTransition, isTerminalState, SANDBOX_STATES } from '@sbx/protocol';
import { resolveLifecycleTimers } from '../../src/domain/lifecycle/lifecycle-settings.js';
import { reaperPasses } from '../../src/domain/lifecycle/reaper-passes.js';
import { reconciledState } from '../../src/domain/lifecycle/reconcile-sandbox.js';
import { RECONCILED_STATES } from '../../src/domain/lifecycle/startup-reconcile.js';
import type { ProviderSandboxStatus } from '../../src/providers/provider.js';
import { RUNNING_STATES } from '../../src/store/sandbox-repository.js';

// A Record, so a new provider answer must be listed here too.
const STATUS_SET = { starting: 1, running: 1, stopped: 1, failed: 1, missing: 1 } satisfies Record<
  ProviderSandboxStatus,
  1
>;
const STATUSES = Object.keys(STATUS_SET) as (keyof typeof STATUS_SET)[];

describe('lifecycle states against the protocol', () => {
  it('builds reaper passes whose every due and after-provider state may take the move', () => {
    const now = new Date();
    for (const pass of reaperPasses(resolveLifecycleTimers())) {
      for (const from of [...pass.due(now).states, ...(pass.afterProvider ?? [])]) {
        expect([pass.reason, from, pass.to, canTransition(from, pass.to)]).toEqual([
          pass.reason,
          from,
          pass.to,
          true,
        ]);
      }
    }
  });

  it('lets hard TTL end every sandbox that is not final yet', () => {
    const hardTtl = reaperPasses(resolveLifecycleTimers()).find((pass) => pass.reason === 'hard_ttl');
    expect(hardTtl?.due(new Date()).states).toEqual(
      SANDBOX_STATES.filter((state) => !isTerminalState(state)),
    );
  });

  it('fails on an agent exit only sandboxes that may fail', () => {
    for (const state of RUNNING_STATES)
      expect([state, canTransition(state, 'failed')]).toEqual([state, true]);
  });

  it('reconciles at start-up only into moves the protocol allows', () => {
    expect(RECONCILED_STATES).toEqual(['active', 'idle', 'suspended']);
    for (const state of RECONCILED_STATES) {
      for (const status of STATUSES) {
        const to = reconciledState(state, status);
        // A stop that finds nothing left turns a suspension into a failure.
        const possible =
          to === 'suspended' ? (['suspended', 'failed'] as const) : to === undefined ? [] : [to];
        for (const target of possible) {
          expect([state, status, target, canTransition(state, target)]).toEqual([
            state,
            status,
            target,
            true,
          ]);
        }
      }
    }
  });
});
