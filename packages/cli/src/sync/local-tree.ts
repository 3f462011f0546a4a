import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { nameProblem, type OnRefusedName } from './entry-names.js';

/** A regular file or directory under a sync root, as `lstat` saw it. */
export interface LocalEntry {
  readonly type: 'file' | 'dir';
  readonly size: number;
  readonly mtimeMs: number;
}

/** Relative POSIX path (`src/main.py`, no leading `/`) → entry; parents come before children. */
export type LocalTree = Map<string, LocalEntry>;

/** `root` joined with a tree's relative path (never one that climbs out of `root`). */
export function localPathOf(root: string, rel: string): string {
  if (rel === '') return root;
  const segments = rel.split('/');
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..'))
    throw new Error(`refusing the path ${JSON.stringify(rel)} under ${root}`);
  return path.join(root, ...segments);
}

/**
 * Every regular file and directory under `root`. Symlinks, sockets, FIFOs and devices are
 * left out: the sandbox's files API neither creates links nor opens special files, and
 * following a link could copy a tree from outside the directory being synced. With
 * `onRefused` (a push), names the sandbox would refuse are left out too and reported there.
 */
export async function walkLocal(root: string, onRefused?: OnRefusedName): Promise<LocalTree> {
  const tree: LocalTree = new Map();
  const pending = [''];
  for (let dir = pending.shift(); dir !== undefined; dir = pending.shift()) {
    const names = (await readdir(localPathOf(root, dir))).toSorted();
    for (const name of names) {
      const rel = dir === '' ? name : `${dir}/${name}`;
      const problem = onRefused === undefined ? undefined : nameProblem(name);
      if (problem !== undefined) {
        onRefused?.(rel, `the sandbox does not accept this name: ${problem}`);
        continue;
      }
      const entry = await entryOf(path.join(localPathOf(root, dir), name));
      if (entry === undefined) continue;
      tree.set(rel, entry);
      if (entry.type === 'dir') pending.push(rel);
    }
  }
  return tree;
}

/** The entry at `file`, or undefined when it is gone or neither a file nor a directory. */
export async function entryOf(file: string): Promise<LocalEntry | undefined> {
  try {
    const stats = await lstat(file);
    if (stats.isFile()) return { type: 'file', size: stats.size, mtimeMs: stats.mtimeMs };
    if (stats.isDirectory()) return { type: 'dir', size: 0, mtimeMs: stats.mtimeMs };
    return undefined;
  } catch (err) {
    if (isFsCode(err, 'ENOENT')) return undefined;
    throw err;
  }
}

/** Not `instanceof Error`: fs errors may come from another realm (a test's vm context). */
export function isFsCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === code;
}

/** The top-most paths among `paths`: a removed directory takes its contents with it. */
export function topMost(paths: readonly string[]): string[] {
  const all = new Set(paths);
  return paths.filter((rel) => !ancestorsOf(rel).some((parent) => all.has(parent)));
}

/** `a/b/c` → `a`, `a/b`. */
export function ancestorsOf(rel: string): string[] {
  const parts = rel.split('/');
  return parts.slice(0, -1).map((_, index) => parts.slice(0, index + 1).join('/'));
}

/**
 * The first of `rel`'s parents (from the top; `rel` itself last with `includeSelf`) that
 * is there but is not a real directory: a symlink (writing through it would land outside
 * the synced directory), or a file. Undefined when each is a directory or not there yet.
 */
export async function blockedParent(
  root: string,
  rel: string,
  includeSelf = false,
): Promise<string | undefined> {
  for (const parent of includeSelf ? [...ancestorsOf(rel), rel] : ancestorsOf(rel)) {
    try {
      if (!(await lstat(localPathOf(root, parent))).isDirectory()) return parent;
    } catch (err) {
      if (isFsCode(err, 'ENOENT')) return undefined;
      throw err;
    }
  }
  return undefined;
}
