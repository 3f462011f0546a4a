import type { BigIntStats } from 'node:fs';
import { constants } from 'node:fs';
import { link, lstat, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { SbxError } from '@sbx/protocol';
import { describeSpecial } from './entry-info.js';
import { checkWritePrecondition, isCreateOnly, type WritePrecondition } from './etag.js';
import { errnoOf, fsError, withFsErrors } from './fs-errors.js';
import { KeyedLock } from './keyed-lock.js';
import { withDirectory, type DirHandle } from './dir-handle.js';
import type { PathGuard, ResolvedPath } from './path-guard.js';

/** Uploads in flight live next to their target under this prefix; listings and watchers hide them. */
export const TEMP_PREFIX = '.sbx-upload-';

export interface AtomicWriteRequest {
  /** From `PathGuard.resolveWriteTarget`. */
  readonly target: ResolvedPath;
  readonly body: AsyncIterable<Buffer>;
  readonly maxBytes: number;
  readonly precondition: WritePrecondition;
}

export interface AtomicWriteResult {
  readonly created: boolean;
  /** The new file's stats (the inode that was renamed into place). */
  readonly stats: BigIntStats;
}

export function assertWritableFile(display: string, stats: BigIntStats | undefined): void {
  if (stats === undefined || stats.isFile()) return;
  if (stats.isDirectory()) throw new SbxError('CONFLICT', `${display} is a directory`);
  throw new SbxError(
    'FORBIDDEN',
    `${display} is ${describeSpecial(stats)}; only regular files can be written`,
  );
}

async function writeAll(handle: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) offset += (await handle.write(chunk, offset)).bytesWritten;
}

async function fill(
  handle: FileHandle,
  body: AsyncIterable<Buffer>,
  maxBytes: number,
  display: string,
): Promise<void> {
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > maxBytes) {
      throw new SbxError(
        'PAYLOAD_TOO_LARGE',
        `upload is larger than ${maxBytes} bytes; ${display} was not changed`,
        {
          details: { max_bytes: maxBytes },
        },
      );
    }
    await withFsErrors(display, () => writeAll(handle, chunk));
  }
}

/**
 * Writes are atomic: the body streams into a uniquely named temporary file in the
 * target's directory, is fsynced, then renamed over the target. A reader sees the old
 * file or the new one, never half of either; a failed, aborted or oversized upload
 * leaves the old file and removes the temporary one; concurrent uploads each have their
 * own temporary file, so the last rename wins whole.
 */
export class AtomicWriter {
  readonly #locks = new KeyedLock();

  constructor(private readonly guard: PathGuard) {}

  async write(request: AtomicWriteRequest): Promise<AtomicWriteResult> {
    const { target } = request;
    const display = target.path.display;
    assertWritableFile(display, target.stats);
    checkWritePrecondition(request.precondition, target.stats, display);
    return withDirectory(this.guard, target.dir, display, (dir) => this.#writeIn(dir, request));
  }

  async #writeIn(dir: DirHandle, request: AtomicWriteRequest): Promise<AtomicWriteResult> {
    const { target } = request;
    const display = target.path.display;
    const tempPath = dir.entry(`${TEMP_PREFIX}${randomBytes(12).toString('base64url')}`);
    const handle = await createTemp(tempPath, target);
    let closed = false;
    try {
      await fill(handle, request.body, request.maxBytes, display);
      await withFsErrors(display, () => handle.sync());
      const stats = await handle.stat({ bigint: true });
      closed = true;
      await handle.close();
      const created = await this.#locks.run(target.host, () =>
        commit(tempPath, dir.entry(target.name), display, request.precondition),
      );
      await dir.sync();
      return { created, stats };
    } finally {
      if (!closed) await handle.close().catch(() => undefined);
      await rm(tempPath, { force: true });
    }
  }
}

async function createTemp(tempPath: string, target: ResolvedPath): Promise<FileHandle> {
  const display = target.path.display;
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await withFsErrors(display, () => open(tempPath, flags, 0o644));
  try {
    const existing = target.stats;
    // A replaced file keeps its permissions (an executable script stays executable). The
    // agent is the sandbox's own user, so what it writes is that user's, like any process's.
    if (existing !== undefined) await handle.chmod(Number(existing.mode) & 0o7777);
    return handle;
  } catch (err) {
    await handle.close();
    await rm(tempPath, { force: true });
    throw fsError(err, display);
  }
}

async function commit(
  tempPath: string,
  finalPath: string,
  display: string,
  precondition: WritePrecondition,
): Promise<boolean> {
  const current = await lstat(finalPath, { bigint: true }).catch((err: unknown) => {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw fsError(err, display);
  });
  if (current?.isSymbolicLink() === true) {
    throw new SbxError(
      'CONFLICT',
      `${display} was replaced by a symbolic link during the upload; nothing was changed`,
    );
  }
  assertWritableFile(display, current);
  checkWritePrecondition(precondition, current, display);
  try {
    // link() fails if the name exists, making create-only exact even against other writers.
    if (isCreateOnly(precondition)) await link(tempPath, finalPath);
    else await rename(tempPath, finalPath);
  } catch (err) {
    if (errnoOf(err) === 'EEXIST')
      throw new SbxError('PRECONDITION_FAILED', `${display} already exists (If-None-Match)`);
    throw fsError(err, display);
  }
  return current === undefined;
}
