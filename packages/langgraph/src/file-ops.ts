import { NotFoundError, type SandboxClient } from '@sbx/client';
import type {
  DeleteResult,
  FileDownloadResponse,
  FileOperationError,
  FileUploadResponse,
  LsResult,
  ReadResult,
} from 'deepagents';
import { describeFailure, fileOperationError, nothingToList } from './file-errors.js';

/** The sandbox a file operation runs against. */
export interface FileTarget {
  readonly client: SandboxClient;
  readonly workspacePath: string;
  /** Told of every failed call, so a lost sandbox is checked before the next use. */
  noteFailure?(err: unknown): void;
}

const EMPTY_FILE = 'System reminder: File exists but has empty contents';

/**
 * Writes through the file API, not a shell: bytes arrive exactly (binary, any name, any
 * size), the write is atomic and missing parents are created. One answer per file, in order;
 * one file's failure does not stop the others.
 */
export async function uploadFiles(
  target: FileTarget,
  files: Array<[string, Uint8Array]>,
): Promise<FileUploadResponse[]> {
  return Promise.all(
    files.map(async ([path, content]): Promise<FileUploadResponse> => {
      try {
        await target.client.files.write(path, content);
        return { path, error: null };
      } catch (err) {
        target.noteFailure?.(err);
        return { path, error: fileOperationError(err) };
      }
    }),
  );
}

/**
 * A file's bytes, or why not. The agent answers a download of a directory with its listing
 * (JSON) rather than an error, so content that opens with `{` is checked with a stat: one more
 * round trip, for JSON files only.
 */
async function readBytes(
  target: FileTarget,
  path: string,
): Promise<{ content: Uint8Array } | { error: FileOperationError; cause: unknown }> {
  try {
    const content = await target.client.files.read(path);
    if (content[0] === 0x7b && (await target.client.files.stat(path)).type === 'dir') {
      return { error: 'is_directory', cause: new Error(`'${path}' is a directory`) };
    }
    return { content };
  } catch (err) {
    target.noteFailure?.(err);
    return { error: fileOperationError(err), cause: err };
  }
}

export async function downloadFiles(target: FileTarget, paths: string[]): Promise<FileDownloadResponse[]> {
  return Promise.all(
    paths.map(async (path): Promise<FileDownloadResponse> => {
      const read = await readBytes(target, path);
      return 'content' in read
        ? { path, content: read.content, error: null }
        : { path, content: null, error: read.error };
    }),
  );
}

/**
 * One directory by the file API: names with newlines or tabs cannot break a parser here. A
 * path that does not exist, or is a file, lists as empty without an error, as deepagents'
 * BaseSandbox and LocalShellBackend answer; other failures (403, a lost sandbox) are errors.
 */
export async function listDirectory(target: FileTarget, path: string): Promise<LsResult> {
  try {
    const listing = await target.client.files.list(path);
    const base = listing.path.endsWith('/') ? listing.path : `${listing.path}/`;
    const files = listing.entries.map((e) => ({
      path: e.type === 'dir' ? `${base}${e.name}/` : `${base}${e.name}`,
      is_dir: e.type === 'dir',
      size: e.size,
      modified_at: e.mtime,
    }));
    return { files };
  } catch (err) {
    target.noteFailure?.(err);
    return nothingToList(err) ? { files: [] } : { error: describeFailure(err, path) };
  }
}

/**
 * A text file's lines `offset` … `offset + limit - 1`, raw (the read tool numbers them), with
 * the pagination fields deepagents' FilesystemBackend gives. Reads the whole file through the
 * file API: exact bytes and no shell quoting, at the cost of the transfer; `maxBytes` keeps
 * huge files on the shell path, which only sends the slice.
 */
export async function readTextLines(
  target: FileTarget,
  path: string,
  offset: number,
  limit: number,
): Promise<ReadResult> {
  const read = await readBytes(target, path);
  if ('error' in read) return { error: describeFailure(read.cause, path) };
  const text = new TextDecoder().decode(read.content);
  if (text.trim() === '') return { content: EMPTY_FILE };
  const lines = text.split('\n');
  const total = lines[lines.length - 1] === '' ? lines.length - 1 : lines.length;
  if (offset >= total) return { error: `Line offset ${offset} exceeds file length (${total} lines)` };
  const end = Math.min(offset + limit, total);
  const content = lines.slice(offset, end).join('\n');
  if (limit === 0) return { content: '' };
  return {
    content,
    totalLines: total,
    startLine: offset + 1,
    endLine: end,
    ...(end < total ? { nextOffset: end } : {}),
  };
}

/** Removes a file or a whole directory; a missing path is an error value, as deepagents' backends give. */
export async function removePath(target: FileTarget, path: string): Promise<DeleteResult> {
  try {
    await target.client.files.stat(path);
    await target.client.files.remove(path, { recursive: true });
    return { path, filesUpdate: null };
  } catch (err) {
    target.noteFailure?.(err);
    if (err instanceof NotFoundError) return { error: `Error: '${path}' not found` };
    return { error: describeFailure(err, path) };
  }
}

const BINARY =
  /\.(png|jpe?g|gif|webp|heic|heif|mp3|wav|aiff|aac|ogg|flac|mp4|webm|mpeg|mov|avi|flv|mpg|wmv|3gpp|pdf|pptx?)$/i;

/** deepagents reads these as bytes (its MIME table); everything else is text. */
export function isTextPath(path: string): boolean {
  return !BINARY.test(path);
}
