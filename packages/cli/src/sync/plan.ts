import { ancestorsOf, topMost } from './local-tree.js';

type Tree = ReadonlyMap<string, { readonly type: 'file' | 'dir' }>;

/** What a sync will do to make the target side look like the source side. */
export interface SyncPlan {
  /** Paths whose type differs (a file on one side, a directory on the other). */
  readonly conflicts: readonly string[];
  /** Top-most target paths to remove first: extra ones and, with `--delete`, conflicts. */
  readonly removals: readonly string[];
  readonly mkdirs: readonly string[];
  readonly copies: readonly string[];
  readonly unchanged: number;
}

/**
 * Compares the two trees. Without `deleteExtra` nothing on the target is removed: a
 * conflicting path is reported and left alone on both sides (with what is below it), as
 * rsync refuses to replace a directory by a file unless told to delete.
 */
export function planSync(
  source: Tree,
  target: Tree,
  deleteExtra: boolean,
  same: (rel: string) => boolean,
): SyncPlan {
  const conflicts = [...source].flatMap(([rel, entry]) => {
    const other = target.get(rel);
    return other !== undefined && other.type !== entry.type ? [rel] : [];
  });
  const blocked = new Set(deleteExtra ? [] : conflicts);
  const replaced = new Set(deleteExtra ? conflicts : []);
  const isBlocked = (rel: string): boolean =>
    blocked.has(rel) || ancestorsOf(rel).some((a) => blocked.has(a));
  const extra = [...target.keys()].filter((rel) => !source.has(rel));
  const removals = deleteExtra ? topMost([...extra, ...conflicts]) : [];
  const mkdirs: string[] = [];
  const copies: string[] = [];
  let unchanged = 0;
  for (const [rel, entry] of source) {
    if (isBlocked(rel)) continue;
    const missing = !target.has(rel) || replaced.has(rel);
    if (entry.type === 'dir') {
      if (missing) mkdirs.push(rel);
    } else if (missing || !same(rel)) copies.push(rel);
    else unchanged++;
  }
  return { conflicts: topMost(conflicts), removals, mkdirs, copies, unchanged };
}
