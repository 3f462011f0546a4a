import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { SbxError } from '@sbx/protocol';

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  if (relative === '') return true;
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** Not `instanceof Error`: errors from Node's internals may come from another realm (e.g. under jest). */
function errnoOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : undefined;
}

/**
 * The absolute directory a process starts in. `cwd` is relative to the workspace
 * (an absolute path is accepted when it lies inside it). It must resolve inside the
 * workspace after following every symlink: a link pointing out is refused like `..`.
 */
export async function resolveWorkingDirectory(
  workspaceRoot: string,
  cwd: string | undefined,
): Promise<string> {
  if (cwd === undefined || cwd === '' || cwd === '.') return workspaceRoot;
  if (cwd.includes('\0')) throw new SbxError('BAD_REQUEST', 'cwd must not contain NUL bytes');
  const requested = path.resolve(workspaceRoot, cwd);
  if (!isInside(workspaceRoot, requested))
    throw new SbxError('FORBIDDEN', 'cwd must stay inside the workspace');
  let real: string;
  try {
    real = await realpath(requested);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new SbxError('NOT_FOUND', 'cwd does not exist');
    throw new SbxError('FORBIDDEN', 'cwd is not accessible', { cause: err });
  }
  if (!isInside(workspaceRoot, real))
    throw new SbxError('FORBIDDEN', 'cwd resolves outside the workspace (through a symlink)');
  if (!(await stat(real)).isDirectory()) throw new SbxError('BAD_REQUEST', 'cwd is not a directory');
  return real;
}
