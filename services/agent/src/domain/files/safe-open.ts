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

/** Attempts before a descriptor whose name keeps leading elsewhere is refused. */
const OPEN_ATTEMPTS = 3;

type Placement = 'confirmed' | 'renamed' | 'refused';

/**
 * Where the kernel says an open descriptor really is. Between the guard's walk and
 * `open`, a process in the sandbox could swap a directory for a symlink; the
 * descriptor's own path cannot lie about where it ended up. That name must not be a
 * refused one, and must lead to this very file in the agent's view: a file reached through
 * another view (a descriptor's magic link) has no such name here. A file replaced under its
 * name meanwhile (an atomic save) also fails that test: `renamed`, opened again by callers.
 */
async function placementOf(guard: PathGuard, handle: FileHandle): Promise<Placement> {
  let opened: string;
  try {
    opened = await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return 'confirmed'; // no /proc (not Linux): the guard's walk is the only check
  }
  const held = await handle.stat({ bigint: true });
  if (!guard.contains(opened.replace(/ \(deleted\)$/, '')) || guard.isKernelFile(held)) return 'refused';
  const named = await stat(opened, { bigint: true }).catch(() => undefined);
  return named !== undefined && named.dev === held.dev && named.ino === held.ino ? 'confirmed' : 'renamed';
}

function swapped(display: string): SbxError {
  return new SbxError(
    'FORBIDDEN',
    `${display} was swapped for a path the file API does not serve while it was being opened`,
  );
}

/**
 * Opens with `opener` and confirms where the descriptor is (placementOf), opening again
 * when the file was replaced meanwhile; closes and throws FORBIDDEN otherwise.
 */
export async function openConfirmed(
  guard: PathGuard,
  display: string,
  opener: () => Promise<FileHandle>,
): Promise<FileHandle> {
  for (let attempt = 1; ; attempt++) {
    const handle = await opener();
    const placement = await placementOf(guard, handle).catch(async (err: unknown) => {
      await handle.close();
      throw err;
    });
    if (placement === 'confirmed') return handle;
    await handle.close();
    if (placement === 'refused' || attempt >= OPEN_ATTEMPTS) throw swapped(display);
  }
}

/**
 * Opens a regular file for reading. O_NOFOLLOW: the guard resolved every symlink, so
 * one appearing now is a swap; O_NONBLOCK: a FIFO swapped in cannot hang the agent
 * (and is refused by the type check on the descriptor, before any read).
 */
export async function openRegularFile(guard: PathGuard, host: string, display: string): Promise<OpenedFile> {
  const handle = await openConfirmed(guard, display, () =>
    open(host, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((err: unknown) => {
      throw fsError(err, display);
    }),
  );
  try {
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile()) {
      throw new SbxError(
        'FORBIDDEN',
        `${display} is ${describeSpecial(stats)}; only regular files can be read`,
      );
    }
    return { handle, stats };
  } catch (err) {
    await handle.close();
    throw fsError(err, display);
  }
}
