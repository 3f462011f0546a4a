import type { BigIntStats } from 'node:fs';
import { lstat, mkdir, rename, rmdir, unlink } from 'node:fs/promises';
import { SbxError } from '@sbx/protocol';
import { withDirectory } from './dir-handle.js';
import { describeSpecial, entryInfo, isSpecial, type EntryInfo } from './entry-info.js';
import { etagOf } from './etag.js';
import { errnoOf, fsError, withFsErrors } from './fs-errors.js';
import type { ExistingPath, PathGuard } from './path-guard.js';
import { removeTree } from './tree-removal.js';
import type { SandboxPath } from './sandbox-path.js';

/** An entry as stat, mkdir and move report it: its canonical path, and an ETag for files. */
export interface PathInfo extends EntryInfo {
  readonly path: string;
  readonly etag?: string;
}

export function pathInfo(path: SandboxPath, stats: BigIntStats): PathInfo {
  const name = path.segments.at(-1) ?? '';
  return {
    path: path.display,
    ...entryInfo(name, stats),
    ...(stats.isFile() ? { etag: etagOf(stats) } : {}),
  };
}

function refuseSpecial(entry: ExistingPath, action: string): void {
  if (isSpecial(entry.stats)) {
    throw new SbxError(
      'FORBIDDEN',
      `${entry.path.display} is ${describeSpecial(entry.stats)}; it cannot be ${action}`,
    );
  }
}

/** `stat`, following symlinks; FIFOs and devices are described, never opened. */
export async function statPath(guard: PathGuard, target: SandboxPath): Promise<PathInfo> {
  const resolved = await guard.resolveExisting(target);
  return pathInfo(target, resolved.stats);
}

/** `mkdir` (`mkdir -p` with `parents`: an existing directory is then no error). */
export async function makeDirectory(
  guard: PathGuard,
  target: SandboxPath,
  parents: boolean,
): Promise<{ readonly created: boolean; readonly info: PathInfo }> {
  const resolved = await guard.resolveNewEntry(target, parents);
  if (resolved.stats !== undefined) {
    if (parents && resolved.stats.isDirectory())
      return { created: false, info: pathInfo(target, resolved.stats) };
    throw new SbxError('CONFLICT', `${target.display} already exists`);
  }
  return withDirectory(guard, resolved.dir, target.display, async (dir) => {
    const entry = dir.entry(resolved.name);
    await withFsErrors(target.display, () => mkdir(entry));
    return { created: true, info: pathInfo(target, await lstat(entry, { bigint: true })) };
  });
}

/** Deletes a file, a symlink (never its target) or a directory (recursively only when asked). */
export async function removePath(guard: PathGuard, target: SandboxPath, recursive: boolean): Promise<void> {
  const entry = await guard.resolveEntry(target);
  refuseSpecial(entry, 'deleted through the files API');
  await withDirectory(guard, entry.dir, target.display, async (dir) => {
    const host = dir.entry(entry.name);
    try {
      if (!entry.stats.isDirectory()) await unlink(host);
      else if (recursive) await removeTree(dir, entry.name);
      else await rmdir(host);
    } catch (err) {
      if (errnoOf(err) === 'ENOTEMPTY' || errnoOf(err) === 'EEXIST') {
        throw new SbxError(
          'CONFLICT',
          `${target.display} is a directory that is not empty; delete it with recursive=true to remove everything in it`,
        );
      }
      throw fsError(err, target.display);
    }
  });
}

/** Renames (within one filesystem); an existing destination is replaced only with `overwrite`. */
export async function movePath(
  guard: PathGuard,
  from: SandboxPath,
  to: SandboxPath,
  overwrite: boolean,
): Promise<PathInfo> {
  if (from.display === to.display)
    throw new SbxError('BAD_REQUEST', 'source and destination are the same path');
  const source = await guard.resolveEntry(from);
  refuseSpecial(source, 'moved through the files API');
  const destination = await guard.resolveNewEntry(to);
  if (destination.stats !== undefined) {
    if (!overwrite) {
      throw new SbxError('CONFLICT', `${to.display} already exists; pass overwrite: true to replace it`);
    }
    refuseSpecial({ ...destination, stats: destination.stats }, 'replaced through the files API');
    if (destination.stats.isDirectory() && !source.stats.isDirectory()) {
      throw new SbxError('CONFLICT', `${to.display} is a directory; a file cannot replace it`);
    }
  }
  return withDirectory(guard, source.dir, from.display, (fromDir) =>
    withDirectory(guard, destination.dir, to.display, async (toDir) => {
      const landed = toDir.entry(destination.name);
      await withFsErrors(to.display, () => rename(fromDir.entry(source.name), landed));
      return pathInfo(to, await lstat(landed, { bigint: true }));
    }),
  );
}
