import { printable } from '../printable.js';
import { humanBytes } from '../progress-bar.js';

/** `ignore`: a path left alone for what it is (a name not allowed, a symlink on the way); `reason` says. */
export type ChangeAction = 'upload' | 'download' | 'mkdir' | 'delete' | 'conflict' | 'ignore';

/** One thing a sync did (or, for a conflict, refused to do); `path` is relative to the roots. */
export interface Change {
  readonly action: ChangeAction;
  readonly path: string;
  readonly bytes?: number;
  readonly reason?: string;
}

export interface SyncSummary {
  readonly direction: 'push' | 'pull';
  readonly local: string;
  readonly remote: string;
  readonly uploaded: number;
  readonly downloaded: number;
  readonly directories_created: number;
  readonly deleted: number;
  readonly skipped: number;
  readonly conflicts: number;
  readonly ignored: number;
  readonly bytes: number;
  readonly changes: readonly Change[];
}

const VERB: Record<ChangeAction, string> = {
  upload: 'uploaded',
  download: 'downloaded',
  mkdir: 'created',
  delete: 'deleted',
  conflict: 'conflict',
  ignore: 'ignored',
};

/** How a change reads in a terminal: `uploaded   src/a.py (1.2 KiB)`; control characters masked. */
export function changeLine(change: Change): string {
  const size = change.bytes === undefined ? '' : ` (${humanBytes(change.bytes)})`;
  const reason = change.reason === undefined ? '' : `: ${printable(change.reason)}`;
  return `${VERB[change.action].padEnd(10)} ${printable(change.path)}${size}${reason}`;
}

/** Counts what a sync does and tells `onChange` about each change as it happens. */
export class SyncReport {
  readonly #changes: Change[] = [];
  #skipped = 0;

  constructor(
    private readonly base: Pick<SyncSummary, 'direction' | 'local' | 'remote'>,
    private readonly onChange: (change: Change) => void,
  ) {}

  record(change: Change): void {
    this.#changes.push(change);
    this.onChange(change);
  }

  skip(): void {
    this.#skipped++;
  }

  summary(): SyncSummary {
    const count = (action: ChangeAction): number => this.#changes.filter((c) => c.action === action).length;
    return {
      ...this.base,
      uploaded: count('upload'),
      downloaded: count('download'),
      directories_created: count('mkdir'),
      deleted: count('delete'),
      skipped: this.#skipped,
      conflicts: count('conflict'),
      ignored: count('ignore'),
      bytes: this.#changes.reduce((sum, c) => sum + (c.bytes ?? 0), 0),
      changes: this.#changes,
    };
  }
}

/** `push /home/me/src → t1:/src: 2 uploaded, 1 deleted, 10 unchanged, 4.0 KiB`. */
export function summaryLine(s: SyncSummary): string {
  const arrow = s.direction === 'push' ? `${s.local} → ${s.remote}` : `${s.remote} → ${s.local}`;
  const parts = [
    s.direction === 'push' ? `${s.uploaded} uploaded` : `${s.downloaded} downloaded`,
    ...(s.directories_created > 0 ? [`${s.directories_created} directories created`] : []),
    ...(s.deleted > 0 ? [`${s.deleted} deleted`] : []),
    `${s.skipped} unchanged`,
    ...(s.conflicts > 0 ? [`${s.conflicts} conflicts`] : []),
    ...(s.ignored > 0 ? [`${s.ignored} ignored`] : []),
    humanBytes(s.bytes),
  ];
  return `${s.direction} ${arrow}: ${parts.join(', ')}`;
}
