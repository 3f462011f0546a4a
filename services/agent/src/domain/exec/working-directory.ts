import path from 'node:path';
import { SbxError } from '@sbx/protocol';
import type { PathGuard } from '../files/path-guard.js';

/**
 * The directory a process starts in, as processes of the sandbox name it. `cwd` is a
 * sandbox path: relative to the workspace, or absolute; omitted, the workspace itself
 * (also every process's HOME). It is resolved by the same guard as the file API, so what
 * exec starts in is what the file API would list there.
 */
export async function resolveWorkingDirectory(guard: PathGuard, cwd: string | undefined): Promise<string> {
  if (cwd === undefined || cwd === '' || cwd === '.') return guard.workspace;
  if (cwd.includes('\0')) throw new SbxError('BAD_REQUEST', 'cwd must not contain NUL bytes');
  const target = guard.parse(path.posix.resolve(guard.workspace, cwd));
  const resolved = await guard.resolveExisting(target).catch((err: unknown) => {
    if (err instanceof SbxError && err.code === 'NOT_FOUND')
      throw new SbxError('NOT_FOUND', `cwd ${target.display} does not exist`);
    throw err;
  });
  if (!resolved.stats.isDirectory())
    throw new SbxError('BAD_REQUEST', `cwd ${target.display} is not a directory`);
  return resolved.host;
}
