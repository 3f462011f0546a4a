import { constants, existsSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fsError } from './fs-errors.js';
import type { PathGuard } from './path-guard.js';
import { openConfirmed } from './safe-open.js';

/**
 * Names under `/proc/self/fd/<n>/` are looked up in the directory that descriptor holds,
 * like the `*at()` system calls Node lacks: once a directory is open and checked, a
 * process in the sandbox swapping it (or a parent) for a symlink cannot redirect the
 * create, rename, unlink or listing that follows. Without procfs, paths are used as is.
 */
const PROC_FD = existsSync('/proc/self/fd') ? '/proc/self/fd' : undefined;

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export class DirHandle {
  private constructor(
    private readonly handle: FileHandle,
    private readonly host: string,
  ) {}

  /** Opens a directory the guard resolved (symlink-free) and checks where it really is. */
  static async open(guard: PathGuard, host: string, display: string): Promise<DirHandle> {
    const handle = await openConfirmed(guard, display, () =>
      open(host, DIRECTORY_FLAGS).catch((err: unknown) => {
        throw fsError(err, display);
      }),
    );
    return new DirHandle(handle, host);
  }

  /** Opens the child directory `name` of this one, refusing a symlink there (ELOOP/ENOTDIR). */
  async openChild(name: string): Promise<DirHandle> {
    const handle = await open(this.entry(name), DIRECTORY_FLAGS);
    return new DirHandle(handle, path.join(this.host, name));
  }

  /** The path through which this directory itself is listed or synced. */
  get self(): string {
    return PROC_FD === undefined ? this.host : `${PROC_FD}/${this.handle.fd}`;
  }

  /** The path of `name` inside this very directory. */
  entry(name: string): string {
    return `${this.self}/${name}`;
  }

  /** Makes renames and creations in this directory durable; some file systems refuse, harmlessly. */
  async sync(): Promise<void> {
    await this.handle.sync().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/** Runs `body` with the directory open, closing it afterwards whatever happens. */
export async function withDirectory<T>(
  guard: PathGuard,
  host: string,
  display: string,
  body: (dir: DirHandle) => Promise<T>,
): Promise<T> {
  const dir = await DirHandle.open(guard, host, display);
  try {
    return await body(dir);
  } finally {
    await dir.close();
  }
}
