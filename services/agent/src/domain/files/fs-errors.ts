import { SbxError } from '@sbx/protocol';

/** The `code` of a Node.js system error (`ENOENT`, `ENOSPC` …), if it is one. */
export function errnoOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code: unknown = err.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * A file-system failure as the protocol's error, naming the workspace path (never the
 * host path). Unknown failures stay INTERNAL with the cause kept for the log.
 */
export function fsError(err: unknown, display: string): SbxError {
  if (err instanceof SbxError) return err;
  switch (errnoOf(err)) {
    case 'ENOENT':
      return new SbxError('NOT_FOUND', `${display} does not exist`);
    case 'EEXIST':
      return new SbxError('CONFLICT', `${display} already exists`);
    case 'ENOTDIR':
      return new SbxError('CONFLICT', `a parent of ${display} is not a directory`);
    case 'EISDIR':
      return new SbxError('CONFLICT', `${display} is a directory`);
    case 'ENOTEMPTY':
      return new SbxError('CONFLICT', `${display} is a directory that is not empty`);
    case 'EBUSY':
    case 'ETXTBSY':
      return new SbxError('CONFLICT', `${display} is in use (a mount point or a running program)`);
    case 'EXDEV':
      return new SbxError(
        'CONFLICT',
        `${display} is on another file system; it cannot be moved there by renaming`,
      );
    case 'ELOOP':
      return new SbxError('BAD_REQUEST', `${display} goes through a symbolic link loop`);
    case 'ENAMETOOLONG':
      return new SbxError('BAD_REQUEST', `${display} is too long for the file system`);
    case 'EACCES':
    case 'EPERM':
      return new SbxError('FORBIDDEN', `permission denied on ${display}`);
    case 'EROFS':
      return new SbxError('FORBIDDEN', `${display} is on a read-only file system`);
    case 'EFBIG':
      return new SbxError(
        'PAYLOAD_TOO_LARGE',
        `${display} would exceed the sandbox's largest file size; nothing was changed`,
      );
    case 'ENOSPC':
    case 'EDQUOT':
      return new SbxError(
        'INSUFFICIENT_STORAGE',
        `no space left in the workspace while writing ${display}; nothing was changed`,
      );
    case 'EINVAL':
      return new SbxError(
        'BAD_REQUEST',
        `invalid operation on ${display} (e.g. moving a directory into itself)`,
      );
    case undefined:
    default:
      return SbxError.from(err);
  }
}

/** Runs `operation`, mapping any file-system failure to the protocol's error for `display`. */
export async function withFsErrors<T>(display: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (err) {
    throw fsError(err, display);
  }
}
