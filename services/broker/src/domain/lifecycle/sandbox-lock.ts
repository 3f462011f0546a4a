// Coordination keys the lifecycle shares with the rest of the broker.

/** Held by the one broker instance running a reaper round. */
export const REAPER_LOCK_KEY = 'reaper';

/**
 * Held by whoever changes a sandbox's state together with its provider
 * (reaper: stop, destroy; negotiation: create, resume, release), so that a
 * resume and a suspension of the same sandbox never interleave.
 */
export function sandboxLockKey(sandboxId: string): string {
  return `sandbox:${sandboxId}`;
}
