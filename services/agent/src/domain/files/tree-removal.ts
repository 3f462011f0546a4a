import { lstat, readdir, rmdir, unlink } from 'node:fs/promises';
import type { DirHandle } from './dir-handle.js';
import { errnoOf } from './fs-errors.js';

/**
 * Removes `name` in `parent` and, for a directory, everything in it. Each directory is
 * opened without following symlinks and its children are reached through that open
 * descriptor, so a symlink met on the way (or swapped in while deleting) is unlinked
 * itself and never descended into: nothing outside the tree can be removed.
 */
export async function removeTree(parent: DirHandle, name: string): Promise<void> {
  const entry = parent.entry(name);
  const stats = await lstat(entry).catch((err: unknown) => {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (stats === undefined) return;
  if (!stats.isDirectory()) {
    await unlinkIfPresent(entry);
    return;
  }
  let dir: DirHandle;
  try {
    dir = await parent.openChild(name);
  } catch (err) {
    // Swapped for a symlink or file since the lstat: remove that entry, do not follow it.
    if (errnoOf(err) === 'ELOOP' || errnoOf(err) === 'ENOTDIR') return unlinkIfPresent(entry);
    throw err;
  }
  try {
    for (const child of await readdir(dir.self)) await removeTree(dir, child);
  } finally {
    await dir.close();
  }
  await rmdir(entry);
}

async function unlinkIfPresent(entry: string): Promise<void> {
  await unlink(entry).catch((err: unknown) => {
    if (errnoOf(err) !== 'ENOENT') throw err;
  });
}
