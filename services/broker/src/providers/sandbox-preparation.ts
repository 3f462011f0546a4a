import type { SigningKey } from '@sbx/tokens';
import { noSpaceRefusal, type DiskAdmission, type DiskBudget } from './disk-budget.js';
import type { LocalSettings } from './local-settings.js';
import {
  readSandboxRecord,
  recordedHostUids,
  removeSandboxFiles,
  writeSandboxFiles,
  type SandboxPaths,
  type SandboxRecord,
} from './sandbox-layout.js';
import { DEFAULT_SANDBOX_LIMITS } from './sandbox-limits.js';
import { claimHostUid, releaseHostUid } from './host-uid-claims.js';
import { candidateSandboxUids } from './sandbox-users.js';
import type { SerialQueue } from './serial-queue.js';

/** Allocations of host uids are serialised under this key of the provider's queue. */
const UID_ALLOCATION = '\u0000uids';

/**
 * Writes a new sandbox's files: a host user of its own when the broker is root (one
 * allocation at a time, so two sandboxes never pick the same uid), and a workspace
 * volume of the tenant's size where the host allows one.
 */
export async function prepareSandbox(
  settings: LocalSettings,
  queue: SerialQueue,
  base: SandboxRecord,
  paths: SandboxPaths,
  key: SigningKey,
): Promise<SandboxRecord> {
  try {
    return await writeSandbox(settings, queue, base, paths, key);
  } catch (err) {
    // A full disk is the caller's 507, not the provider's retryable 503 (reliability/disk).
    throw noSpaceRefusal(err, `the workspace of sandbox ${base.sandboxId}`) ?? err;
  }
}

async function writeSandbox(
  settings: LocalSettings,
  queue: SerialQueue,
  base: SandboxRecord,
  paths: SandboxPaths,
  key: SigningKey,
): Promise<SandboxRecord> {
  // Recorded before the volume exists: a sandbox whose create fails is removed whole anyway.
  const planned = settings.volumes === undefined ? base : { ...base, volume: true };
  const record = settings.sandboxUsers
    ? await queue.run(UID_ALLOCATION, async () => {
        const owner = { dataDir: settings.dataDir, sandboxId: base.sandboxId };
        const taken = await recordedHostUids(settings.dataDir);
        const hostUid = await claimHostUid(settings.uidClaimsDir, owner, candidateSandboxUids(taken));
        const withUser = { ...planned, hostUid };
        await writeSandboxFiles(paths, withUser, key).catch(async (err: unknown) => {
          await releaseHostUid(settings.uidClaimsDir, hostUid, owner);
          throw err;
        });
        return withUser;
      })
    : await writeSandboxFiles(paths, planned, key).then(() => planned);
  const bytes = (record.limits ?? DEFAULT_SANDBOX_LIMITS).diskBytes;
  await settings.volumes?.create(paths.volumeFile, paths.workspace, bytes, record.hostUid);
  return record;
}

/**
 * Admits a workspace of the record's size against the disk (disk-budget.ts): refused with
 * 507 before anything is made. A resumed image is counted once, credited with what it
 * already occupies; a new one's admission is held until its image exists.
 */
export async function admitWorkspace(
  disk: DiskBudget | undefined,
  record: SandboxRecord,
): Promise<DiskAdmission | undefined> {
  return disk?.admit(record.sandboxId, (record.limits ?? DEFAULT_SANDBOX_LIMITS).diskBytes);
}

/** Deletes a sandbox's files, its workspace volume unmounted first. */
export async function removeSandbox(settings: LocalSettings, paths: SandboxPaths): Promise<void> {
  await settings.volumes?.unmount(paths.workspace);
  const record = await readSandboxRecord(paths).catch(() => undefined);
  await removeSandboxFiles(paths, settings.sandboxUsers ? record?.hostUid : undefined);
  if (record?.hostUid !== undefined)
    await releaseHostUid(settings.uidClaimsDir, record.hostUid, {
      dataDir: settings.dataDir,
      sandboxId: record.sandboxId,
    });
}
