// A stopped sandbox resumes with the workspace it had, or not at all: the agent creates a
// missing workspace directory, and a volume whose image is gone would leave an empty mount
// point, so either would start the sandbox on an empty workspace as if nothing happened
// (docs/lifecycle.md, "Suspend and resume"). Messages name no host path: they reach clients.
import { stat } from 'node:fs/promises';
import { SbxError } from '@sbx/protocol';
import { providerUnavailable, sandboxNotFound } from './provider.js';
import { readSandboxRecord, type SandboxPaths, type SandboxRecord } from './sandbox-layout.js';

const isDirectory = (p: string) =>
  stat(p).then(
    (entry) => entry.isDirectory(),
    () => false,
  );
const isFile = (p: string) =>
  stat(p).then(
    (entry) => entry.isFile(),
    () => false,
  );

function workspaceGone(sandboxId: string, what: string): SbxError {
  return new SbxError(
    'SANDBOX_NOT_FOUND',
    `the workspace of sandbox ${sandboxId} is gone (${what}); it is not started on an empty one`,
    { details: { sandbox_id: sandboxId } },
  );
}

/**
 * The record of a sandbox to start again, once its workspace is known to be there.
 * SANDBOX_NOT_FOUND when the record, the workspace directory or its volume image is
 * missing; PROVIDER_UNAVAILABLE when its volume cannot be mounted on this host.
 */
export async function keptSandboxRecord(
  paths: SandboxPaths,
  sandboxId: string,
  volumesHere: boolean,
): Promise<SandboxRecord> {
  const record = await readSandboxRecord(paths);
  if (record === undefined) throw sandboxNotFound(sandboxId);
  if (!(await isDirectory(paths.workspace)))
    throw workspaceGone(sandboxId, 'its workspace directory is missing');
  if (record.volume === true) {
    if (!(await isFile(paths.volumeFile)))
      throw workspaceGone(sandboxId, 'its workspace volume image is missing');
    // Not lost, but its files are in a volume only a root broker with loop devices can mount.
    if (!volumesHere)
      throw providerUnavailable(
        `the workspace volume of sandbox ${sandboxId} cannot be mounted on this host`,
      );
  }
  return record;
}
