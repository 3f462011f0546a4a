import type { BigIntStats } from 'node:fs';
import { constants } from 'node:fs';
import { open, readlink, stat, type FileHandle } from 'node:fs/promises';
import { SbxError } from '@sbx/protocol';
import { describeSpecial } from './entry-info.js';
import { fsError } from './fs-errors.js';
import type { PathGuard } from './path-guard.js';

export interface OpenedFile {
  readonly handle: FileHandle;
  readonly stats: BigIntStats;
}

/**
 * Where the kernel says an open descriptor really is. Between the guard's walk and
 * `open`, a process in the sandbox could swap a directory for a symlink; the
 * descriptor's own path cannot lie about where it ended up.
 */
export async function confirmInside(guard: PathGuard, handle: FileHandle, display: string): Promise<void> {
  let opened: string;
  try {
    opened = await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return; // no /proc (not Linux): the guard's walk is the only check
  }
  const held = await handle.stat({ bigint: true });
  // The name the kernel gives must lead to this very file in the agent's view: a file
  // reached through another view (a descriptor's magic link) has no such name here.
  const named = await stat(opened, { bigint: true }).catch(() => undefined);
  const sameFile = named !== undefined && named.dev === held.dev && named.ino === held.ino;
  if (!sameFile || !guard.contains(opened) || guard.isKernelFile(held)) {
    throw new SbxError(
      'FORBIDDEN',
      `${display} was swapped for a path the file API does not serve while it was being opened`,
    );
  }
}

/**
 * Opens a regular file for reading. O_NOFOLLOW: the guard resolved every symlink, so
 * one appearing now is a swap; O_NONBLOCK: a FIFO swapped in cannot hang the agent
 * (and is refused by the type check on the descriptor, before any read).
 */
export async function openRegularFile(guard: PathGuard, host: string, display: string): Promise<OpenedFile> {
  let handle: FileHandle;
  try {
    handle = await open(host, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw fsError(err, display);
  }
  try {
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile()) {
      throw new SbxError(
        'FORBIDDEN',
        `${display} is ${describeSpecial(stats)}; only regular files can be read`,
      );
    }
    await confirmInside(guard, handle, display);
    return { handle, stats };
  } catch (err) {
    await handle.close();
    throw fsError(err, display);
  }
}
