import { lstat, readdir } from 'node:fs/promises';
import { SbxError } from '@sbx/protocol';
import { TEMP_PREFIX } from './atomic-writer.js';
import { withDirectory } from './dir-handle.js';
import { describeSpecial, entryInfo, type EntryInfo } from './entry-info.js';
import { withFsErrors } from './fs-errors.js';
import type { ExistingPath, PathGuard } from './path-guard.js';
import type { SandboxPath } from './sandbox-path.js';

export interface DirectoryListing {
  /** The canonical workspace path of the directory (`/` for the root). */
  readonly path: string;
  /** Sorted by name; symlinks are reported as `symlink`, not followed. */
  readonly entries: readonly EntryInfo[];
}

/**
 * Lists one directory (not recursive). Uploads in flight are hidden; an entry that
 * vanishes between reading the directory and looking at it is simply left out.
 */
export async function listDirectory(guard: PathGuard, directory: ExistingPath): Promise<DirectoryListing> {
  const display = directory.path.display;
  const entries = await withDirectory(guard, directory.host, display, async (dir) => {
    const names = await withFsErrors(display, () => readdir(dir.self));
    const infos = await Promise.all(
      names
        .filter((name) => !name.startsWith(TEMP_PREFIX))
        .map(async (name) => {
          const stats = await lstat(dir.entry(name), { bigint: true }).catch(() => undefined);
          return stats === undefined ? undefined : entryInfo(name, stats);
        }),
    );
    return infos.filter((info): info is EntryInfo => info !== undefined);
  });
  return {
    path: display,
    entries: entries.toSorted((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

/** Lists the directory at `target` (following symlinks inside the workspace). */
export async function listPath(guard: PathGuard, target: SandboxPath): Promise<DirectoryListing> {
  const resolved = await guard.resolveExisting(target);
  if (resolved.stats.isDirectory()) return listDirectory(guard, resolved);
  if (resolved.stats.isFile()) throw new SbxError('CONFLICT', `${target.display} is a file, not a directory`);
  throw new SbxError(
    'FORBIDDEN',
    `${target.display} is ${describeSpecial(resolved.stats)}; it cannot be listed`,
  );
}
