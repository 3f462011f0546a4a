import { NotFoundError, type FilesApi } from '@sbx/client';
import { UsageError } from '../exit-codes.js';
import { nameProblem, type OnRefusedName } from './entry-names.js';
import { runPool, TRANSFER_CONCURRENCY } from './pool.js';

/** A file or directory under a remote sync root, as the agent listed it. */
export interface RemoteEntry {
  readonly type: 'file' | 'dir';
  readonly size: number;
  /** RFC 3339 with milliseconds, as the agent reports it. */
  readonly mtime: string;
}

/** POSIX path relative to the sync root (no leading `/`) → entry. */
export type RemoteTree = Map<string, RemoteEntry>;

/** The sandbox path of `rel` under the absolute sandbox directory `root`. */
export function remotePathOf(root: string, rel: string): string {
  const base = root.replace(/\/+$/, '');
  return rel === '' ? base || '/' : `${base}/${rel}`;
}

/**
 * Every file and directory under `root` (symlinks and special files left out, as locally),
 * or undefined when `root` does not exist. Directories are listed a few at a time. Entries
 * are keyed by their path relative to `root`, built from the listed names, never from the
 * absolute paths the agent answers with. A name that is not one plain path segment (`..`,
 * `a/b`, a control character) is left out and handed to `onRefused`: the listing comes
 * from the sandbox, which is not trusted.
 */
export async function walkRemote(
  files: FilesApi,
  root: string,
  thread: string,
  onRefused: OnRefusedName,
): Promise<RemoteTree | undefined> {
  try {
    const info = await files.stat(root);
    if (info.type !== 'dir') throw new UsageError(`sync: ${thread}:${root} is not a directory`);
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
  const tree: RemoteTree = new Map();
  let level = [''];
  while (level.length > 0) {
    const below: string[] = [];
    await runPool(level, TRANSFER_CONCURRENCY, async (dir) => {
      const listing = await files.list(remotePathOf(root, dir));
      for (const entry of listing.entries) {
        if (entry.type !== 'file' && entry.type !== 'dir') continue;
        const rel = dir === '' ? entry.name : `${dir}/${entry.name}`;
        const problem = nameProblem(entry.name);
        if (problem !== undefined) {
          onRefused(rel, `the sandbox listed a name that is not allowed: ${problem}`);
          continue;
        }
        tree.set(rel, { type: entry.type, size: entry.size, mtime: entry.mtime });
        if (entry.type === 'dir') below.push(rel);
      }
    });
    level = below;
  }
  return tree;
}
