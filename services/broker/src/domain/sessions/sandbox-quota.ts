// A tenant's `max_sandboxes` bounds the sandboxes whose agent runs
// (provisioning, active, idle), the ones that cost memory and processes. A
// suspended sandbox keeps only its workspace, so it does not count; resuming
// it is checked like a creation, otherwise suspending and resuming in turn
// would run any number of agents.
//
// `max_sandboxes_per_owner` (by default half of `max_sandboxes`, rounded up:
// `defaultOwnerShare`) bounds one owner's share of them, so a single user cannot
// fill the tenant's quota and lock the others out; a share at or above
// `max_sandboxes` adds nothing and only the tenant's limit is checked. Neither
// refusal names a live count: a caller learns its limit, not how busy the
// tenant (or anyone else in it) is.
import { SbxError } from '@sbx/protocol';
import type { SandboxRepository } from '../../store/index.js';
import type { EffectivePolicy } from './session-policy.js';

export interface QuotaSubject {
  readonly tenantId: string;
  readonly ownerId: string;
}

/** FORBIDDEN when starting one more agent would reach past the owner's or the tenant's limit. */
export async function assertRoomForAgent(
  sandboxes: Pick<SandboxRepository, 'countRunning'>,
  policy: Pick<EffectivePolicy, 'maxSandboxes' | 'maxSandboxesPerOwner'>,
  subject: QuotaSubject,
): Promise<void> {
  // A soft limit: concurrent starts may overshoot it by a few, never by a lot.
  const perOwner = policy.maxSandboxesPerOwner;
  if (perOwner < policy.maxSandboxes) {
    const mine = await sandboxes.countRunning(subject.tenantId, subject.ownerId);
    if (mine >= perOwner) {
      throw new SbxError('FORBIDDEN', `the per-owner limit of ${perOwner} running sandboxes is reached`);
    }
  }
  const running = await sandboxes.countRunning(subject.tenantId);
  if (running >= policy.maxSandboxes) {
    throw new SbxError('FORBIDDEN', "the tenant's limit of running sandboxes is reached");
  }
}
