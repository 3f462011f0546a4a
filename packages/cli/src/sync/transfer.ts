import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, rename, rm, utimes } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FilesApi, PathInfo } from '@sbx/client';
import { entryOf, type LocalEntry } from './local-tree.js';
import type { RemoteEntry } from './remote-tree.js';

/** Up to this size a file is sent as bytes, which the SDK may retry; larger ones stream, sent once. */
const BUFFERED_UPLOAD_BYTES = 8 * 1024 * 1024;

/** The SDK's 30 s default covers the whole call; a large file gets longer (at ≥ 1 MiB/s). */
function timeoutFor(bytes: number): number {
  return 30_000 + Math.ceil(bytes / 1024);
}

/** Uploads one file (atomic on the agent's side); the answer carries the new remote mtime. */
export async function uploadFile(
  files: FilesApi,
  localFile: string,
  remotePath: string,
  size: number,
): Promise<PathInfo> {
  const options = { timeoutMs: timeoutFor(size) };
  if (size <= BUFFERED_UPLOAD_BYTES) return files.write(remotePath, await readFile(localFile), options);
  // oxlint-disable-next-line typescript/no-unsafe-type-assertion -- Node's web stream of a byte stream yields Uint8Array chunks
  const body = Readable.toWeb(createReadStream(localFile)) as ReadableStream<Uint8Array>;
  return files.write(remotePath, body, options);
}

/**
 * Downloads one file next to its destination, renames it into place (a reader never sees
 * half a file) and gives it the sandbox's mtime, so size + mtime match on the next pull.
 */
export async function downloadFile(
  files: FilesApi,
  remotePath: string,
  localFile: string,
  remote: RemoteEntry,
): Promise<LocalEntry> {
  const temp = path.join(
    path.dirname(localFile),
    `.${path.basename(localFile)}.sbx-sync-${randomBytes(4).toString('hex')}`,
  );
  try {
    const stream = await files.readStream(remotePath, { timeoutMs: timeoutFor(remote.size) });
    await pipeline(Readable.fromWeb(stream), createWriteStream(temp, { mode: 0o644 }));
    await utimes(temp, new Date(), new Date(remote.mtime));
    await rename(temp, localFile);
  } finally {
    await rm(temp, { force: true });
  }
  const entry = await entryOf(localFile);
  if (entry === undefined) throw new Error(`${localFile} vanished right after it was downloaded`);
  return entry;
}
