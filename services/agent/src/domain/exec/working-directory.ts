import path from 'node:path';
import { SbxError } from '@sbx/protocol';
import type { PathGuard } from '../files/path-guard.js';

/**
 * The directory a process starts in, as processes of the sandbox name it. `cwd` is a
 * sandbox path: relative to the workspace, or absolute inside it; omitted, the workspace
 * itself (also every process's HOME). It must resolve inside the workspace after every
 * symlink is followed, by the same guard as the file API: a link pointing out is refused
 * like `..`, so what exec starts in is what the file API would list there.
 */
export async function resolveWorkingDirectory(
  workspace: PathGuard,
  cwd: string | undefined,
): Promise<string> {
  if (cwd === undefined || cwd === '' || cwd === '.') return workspace.sandboxRoot;
  if (cwd.includes('\0')) throw new SbxError('BAD_REQUEST', 'cwd must not contain NUL bytes');
  const requested = path.posix.resolve(workspace.sandboxRoot, cwd);
  let target;
  try {
    target = workspace.parse(requested);
  } catch (err) {
    if (err instanceof SbxError && err.code === 'FORBIDDEN') {
      throw new SbxError('FORBIDDEN', `cwd must stay inside the workspace ${workspace.sandboxRoot}`, {
        details: { workspace: workspace.sandboxRoot },
      });
    }
    throw err;
  }
  const resolved = await workspace.resolveExisting(target).catch((err: unknown) => {
    if (err instanceof SbxError && err.code === 'NOT_FOUND')
      throw new SbxError('NOT_FOUND', `cwd ${target.display} does not exist`);
    throw err;
  });
  if (!resolved.stats.isDirectory())
    throw new SbxError('BAD_REQUEST', `cwd ${target.display} is not a directory`);
  return workspace.toSandbox(resolved.host);
}
