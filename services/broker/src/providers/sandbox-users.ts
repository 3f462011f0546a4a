import { randomInt } from 'node:crypto';

/**
 * Host uids a root broker hands out, one per sandbox: a range no distribution gives to
 * people or system services (like the subordinate ids of rootless containers). A
 * distinct user per sandbox keeps sandboxes apart by file permissions as well as by
 * mounts, and makes RLIMIT_NPROC a per-sandbox process limit.
 */
export const SANDBOX_UID_FIRST = 200_000;
export const SANDBOX_UID_COUNT = 100_000;
/** The isolation probe's user, just below the range: it never owns a sandbox. */
export const PROBE_UID = SANDBOX_UID_FIRST - 1;

/** A uid in the range that no recorded sandbox holds (the caller serialises allocations). */
export function pickSandboxUid(taken: ReadonlySet<number>): number {
  if (taken.size >= SANDBOX_UID_COUNT) throw new Error('every sandbox uid is taken');
  for (;;) {
    const uid = SANDBOX_UID_FIRST + randomInt(SANDBOX_UID_COUNT);
    if (!taken.has(uid)) return uid;
  }
}

/** Uids in the range that no recorded sandbox holds, in random order, each once. */
export function* candidateSandboxUids(taken: ReadonlySet<number>): Generator<number> {
  const tried = new Set(taken);
  while (tried.size < SANDBOX_UID_COUNT) {
    const uid = pickSandboxUid(tried);
    tried.add(uid);
    yield uid;
  }
}
