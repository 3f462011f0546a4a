import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '@sbx/client';
import type { FileOperationError } from 'deepagents';

/**
 * The protocol's error of a failed file call as deepagents' standard code. Any absolute path
 * is a path of the sandbox (`/tmp/x` as well as the workspace), so the code follows the
 * error alone: 404 is `file_not_found`, 403 `permission_denied` (a read-only place such as
 * `/etc`, a file the sandbox's user may not touch, `/proc`), a 409 or 400 naming a directory
 * where a file was expected `is_directory`, anything else (a malformed path) `invalid_path`.
 */
export function fileOperationError(err: unknown): FileOperationError {
  if (err instanceof NotFoundError) return 'file_not_found';
  if (err instanceof ForbiddenError) return 'permission_denied';
  if (err instanceof ConflictError && /is a directory/.test(err.message)) return 'is_directory';
  if (err instanceof BadRequestError && /directory/.test(err.message)) return 'is_directory';
  return 'invalid_path';
}

/** A message for the model: what failed, in the sandbox's own words (its reason for a 403). */
export function describeFailure(err: unknown, path: string): string {
  if (err instanceof NotFoundError) return `Error: '${path}' not found`;
  return `Error: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * Whether a listing failed only because there is no directory to list: the path does not
 * exist (404), is a file, or lies below one (409). deepagents' backends answer those with an
 * empty listing rather than an error.
 */
export function nothingToList(err: unknown): boolean {
  return (
    (err instanceof NotFoundError && err.code === 'NOT_FOUND') ||
    (err instanceof ConflictError && err.code === 'CONFLICT')
  );
}
