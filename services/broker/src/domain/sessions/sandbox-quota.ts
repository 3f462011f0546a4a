// A tenant's `max_sandboxes` bounds the sandboxes whose agent runs
// (provisioning, active, idle), the ones that cost memory and processes. A
// suspended sandbox keeps only its workspace, so it does not count; resuming
// it is checked like a creation, otherwise suspending and resuming in turn
// would run any number of agents.
import { SbxError } from '@sbx/protocol';
import type { SandboxRepository } from '../../store/index.js';
import type { EffectivePolicy } from './session-policy.js';

/** FORBIDDEN when starting one more agent would reach past the tenant's limit. */
export async function assertRoomForAgent(
  sandboxes: Pick<SandboxRepository, 'countRunning'>,
  policy: Pick<EffectivePolicy, 'maxSandboxes'>,
  tenantId: string,
): Promise<void> {
  // A soft limit: concurrent starts may overshoot it by a few, never by a lot.
  const running = await sandboxes.countRunning(tenantId);
  if (running >= policy.maxSandboxes) {
    throw new SbxError('FORBIDDEN', `this tenant already has ${running} running sandboxes, its limit`);
  }
}
