export type WatchKind = 'file' | 'dir' | 'other';

/** What one path was, as far as the watcher knew or now sees. */
export interface Snapshot {
  readonly ino: bigint;
  readonly kind: WatchKind;
}

/** One path touched during a debounce window: before and after, and whether its content changed. */
export interface Observation {
  readonly rel: string;
  readonly before: Snapshot | undefined;
  readonly now: Snapshot | undefined;
  /** The kernel reported a modification (not only a name appearing or going). */
  readonly modified: boolean;
}

export type Change =
  | { readonly event: 'create' | 'write' | 'remove'; readonly rel: string; readonly kind: WatchKind }
  | { readonly event: 'rename'; readonly rel: string; readonly oldRel: string; readonly kind: WatchKind };

interface Pending {
  change: Change;
  readonly ino: bigint;
  dropped: boolean;
}

function changesOf(observation: Observation): { event: 'create' | 'write' | 'remove'; snapshot: Snapshot }[] {
  const { before, now } = observation;
  if (now === undefined) return before === undefined ? [] : [{ event: 'remove', snapshot: before }];
  if (before === undefined) return [{ event: 'create', snapshot: now }];
  const replaced = before.ino !== now.ino;
  if (before.kind !== now.kind || (replaced && now.kind !== 'file')) {
    return [
      { event: 'remove', snapshot: before },
      { event: 'create', snapshot: now },
    ];
  }
  // An atomic save (a new inode renamed over the old one) is a write, like an in-place one.
  if (now.kind === 'file' && (replaced || observation.modified)) return [{ event: 'write', snapshot: now }];
  return [];
}

/**
 * Turns a window's observations into events, in the order paths were first touched.
 * A path that disappeared and another that appeared with the same inode and kind in
 * the same window are one `rename` (reported where the new name appeared). A file
 * created and written within one window is a single `create`; one created and removed
 * within it is nothing at all.
 */
export function classifyChanges(observations: readonly Observation[]): Change[] {
  const pending: Pending[] = [];
  const removedByIno = new Map<bigint, Pending>();
  for (const observation of observations) {
    for (const { event, snapshot } of changesOf(observation)) {
      const item: Pending = {
        change: { event, rel: observation.rel, kind: snapshot.kind },
        ino: snapshot.ino,
        dropped: false,
      };
      pending.push(item);
      if (event === 'remove') removedByIno.set(snapshot.ino, item);
    }
  }
  for (const item of pending) {
    if (item.change.event !== 'create') continue;
    const removed = removedByIno.get(item.ino);
    if (removed === undefined || removed.dropped || removed.change.kind !== item.change.kind) continue;
    removed.dropped = true;
    removedByIno.delete(item.ino);
    item.change = {
      event: 'rename',
      rel: item.change.rel,
      oldRel: removed.change.rel,
      kind: item.change.kind,
    };
  }
  return pending.filter((item) => !item.dropped).map((item) => item.change);
}
