// An upload streams into a temporary file next to its target and is renamed into place
// once whole (services/agent/src/domain/files/atomic-writer.ts), so an agent killed
// mid-upload never leaves a partial file under the target's name, but it leaves the
// temporary: hidden from the file API, yet seen by `ls -a` and counted in the workspace's
// size. Before a crashed agent is started again they are deleted, as the sandbox's own
// user (as removeSandboxFiles deletes), so a tree the sandbox controls is never walked
// with more rights than it has; bounded in time: a huge workspace delays no restart long.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { asUser } from '@sbx/service-kit';
import type { Logger } from '@sbx/service-kit';

const run = promisify(execFile);
const FIND = '/usr/bin/find';
/** The agent's own prefix for uploads in flight (atomic-writer.ts TEMP_PREFIX). */
export const UPLOAD_TEMP_PATTERN = '.sbx-upload-*';
const SWEEP_TIMEOUT_MS = 10_000;

/**
 * Deletes the upload temporaries a dead agent left in `workspace` (regular files only,
 * never following a symlink, never leaving the workspace's file system). Best effort:
 * a failure is logged, and the restart goes on (they stay hidden from the file API).
 */
export async function removeUploadLeftovers(
  workspace: string,
  hostUid: number | undefined,
  logger: Logger,
  sandboxId: string,
): Promise<void> {
  const find = { file: FIND, args: ['-P', workspace, '-xdev', '-type', 'f', '-name', UPLOAD_TEMP_PATTERN] };
  const command = hostUid === undefined ? find : asUser({ uid: hostUid, gid: hostUid }, find);
  try {
    await run(command.file, [...command.args, '-delete'], { timeout: SWEEP_TIMEOUT_MS });
  } catch (err) {
    logger.warn({ sandbox_id: sandboxId, err }, 'could not delete the upload leftovers of a crashed agent');
  }
}
