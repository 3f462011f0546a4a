import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '@sbx/client';
import type { FileOperationError } from 'deepagents';

/** Whether `path` is absolute and outside the workspace (the file API refuses those with 403). */
export function outsideWorkspace(path: string, workspacePath: string): boolean {
  if (!path.startsWith('/')) return false;
  const root = workspacePath.endsWith('/') ? workspacePath.slice(0, -1) : workspacePath;
  return path !== root && !path.startsWith(`${root}/`);
}

/**
 * The protocol's error of a failed file call as deepagents' standard code. A 403 is
 * `invalid_path` when the path lies outside the workspace (no permission would help) and
 * `permission_denied` otherwise; a 409 names a directory where a file was expected.
 */
export function fileOperationError(err: unknown, path: string, workspacePath: string): FileOperationError {
  if (outsideWorkspace(path, workspacePath)) return 'invalid_path';
  if (err instanceof NotFoundError) return 'file_not_found';
  if (err instanceof ForbiddenError) return 'permission_denied';
  if (err instanceof ConflictError && /is a directory/.test(err.message)) return 'is_directory';
  if (err instanceof BadRequestError && /directory/.test(err.message)) return 'is_directory';
  return 'invalid_path';
}

/** A message for the model: what failed and, for a path outside the workspace, where to look. */
export function describeFailure(err: unknown, path: string, workspacePath: string): string {
  if (outsideWorkspace(path, workspacePath)) {
    return `Error: '${path}' is outside the sandbox's workspace; use paths under ${workspacePath}`;
  }
  if (err instanceof NotFoundError) return `Error: '${path}' not found`;
  return `Error: ${err instanceof Error ? err.message : String(err)}`;
}
