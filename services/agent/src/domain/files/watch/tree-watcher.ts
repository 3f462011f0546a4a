import { watch, type FSWatcher } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { SbxError } from '@sbx/protocol';
import { TEMP_PREFIX } from '../atomic-writer.js';
import { errnoOf, fsError } from '../fs-errors.js';
import {
  classifyChanges,
  type Change,
  type Observation,
  type Snapshot,
  type WatchKind,
} from './change-classifier.js';

export interface WatchEvent {
  readonly event: 'create' | 'write' | 'remove' | 'rename';
  /** Canonical workspace path (`/dir/file`). */
  readonly path: string;
  readonly kind: WatchKind;
  /** Only on `rename`: where the entry was before. */
  readonly old_path?: string;
}

export interface TreeWatcherOptions {
  /** Host path of the watched directory (resolved and checked by the path guard). */
  readonly hostDir: string;
  /** Its canonical workspace path. */
  readonly displayDir: string;
  readonly recursive: boolean;
  /** Watch one entry of the directory only (a watched file), reported under `display`. */
  readonly only?: { readonly name: string; readonly display: string };
  readonly debounceMs: number;
  readonly maxDirectories: number;
  readonly onEvents: (events: readonly WatchEvent[]) => void;
  /** The watched path went away (no error) or watching failed; the watcher is closed already. */
  readonly onEnd: (error?: SbxError) => void;
}

function kindOf(stats: { isFile(): boolean; isDirectory(): boolean }): WatchKind {
  return stats.isFile() ? 'file' : stats.isDirectory() ? 'dir' : 'other';
}

async function snapshotOf(host: string): Promise<Snapshot | undefined> {
  const stats = await lstat(host, { bigint: true }).catch(() => undefined);
  return stats === undefined ? undefined : { ino: stats.ino, kind: kindOf(stats) };
}

function isUnder(rel: string, dir: string): boolean {
  return rel.startsWith(`${dir}/`);
}

/**
 * Watches a directory (and, recursively, its subdirectories: one inotify watch per
 * directory, added as directories appear) with `fs.watch`, and turns the kernel's bare
 * "something happened to this name" into create / write / remove / rename events by
 * comparing what it knew (inode and kind per path) with an lstat after a short debounce.
 * Symlinks are reported (as `other`) but never followed, so the tree cannot leave the
 * workspace or loop.
 */
export class TreeWatcher {
  readonly #known = new Map<string, Snapshot>();
  readonly #watchers = new Map<string, FSWatcher>();
  #touched = new Map<string, boolean>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  #rootIno: bigint | undefined;
  #closed = false;

  constructor(private readonly options: TreeWatcherOptions) {}

  get directoryCount(): number {
    return this.#watchers.size;
  }

  async start(): Promise<void> {
    this.#rootIno = (await snapshotOf(this.options.hostDir))?.ino;
    if (this.#rootIno === undefined)
      throw new SbxError('NOT_FOUND', `${this.options.displayDir} does not exist`);
    await this.#watchDirectory('', false);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
  }

  #host(rel: string): string {
    return rel === '' ? this.options.hostDir : path.join(this.options.hostDir, rel);
  }

  #display(rel: string): string {
    const only = this.options.only;
    if (only !== undefined && rel === only.name) return only.display;
    if (rel === '') return this.options.displayDir;
    return this.options.displayDir === '/' ? `/${rel}` : `${this.options.displayDir}/${rel}`;
  }

  /** Watches `rel`, records its entries, and returns `create` changes for entries not known before. */
  async #watchDirectory(rel: string, announce: boolean): Promise<Change[]> {
    if (this.#closed || this.#watchers.has(rel)) return [];
    if (this.#watchers.size >= this.options.maxDirectories) {
      throw new SbxError(
        'BAD_REQUEST',
        `more than ${this.options.maxDirectories} directories to watch; watch a narrower path or without recursive`,
      );
    }
    let watcher: FSWatcher;
    try {
      watcher = watch(this.#host(rel), { persistent: false }, (type, name) =>
        this.#onKernelEvent(rel, type, name),
      );
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return []; // gone already: its parent's events say so
      if (code === 'ENOSPC' || code === 'EMFILE') {
        throw new SbxError('RATE_LIMITED', 'the system limit of file watches is reached; watch fewer paths', {
          cause: err,
        });
      }
      throw fsError(err, this.#display(rel));
    }
    watcher.on('error', () => this.#unwatch(rel));
    this.#watchers.set(rel, watcher);
    const only = this.options.only;
    const names = only === undefined ? await readdir(this.#host(rel)).catch(() => []) : [only.name];
    const created: Change[] = [];
    for (const name of names) {
      if (name.startsWith(TEMP_PREFIX)) continue;
      const child = rel === '' ? name : `${rel}/${name}`;
      const snapshot = await snapshotOf(this.#host(child));
      if (snapshot === undefined) continue;
      if (announce && !this.#known.has(child))
        created.push({ event: 'create', rel: child, kind: snapshot.kind });
      this.#known.set(child, snapshot);
      if (snapshot.kind === 'dir' && this.options.recursive)
        created.push(...(await this.#watchDirectory(child, announce)));
    }
    return created;
  }

  #onKernelEvent(rel: string, type: string, name: string | null): void {
    if (this.#closed) return;
    if (name === null) {
      // No name: look again at everything known in that directory.
      for (const known of this.#known.keys())
        if (path.posix.dirname(known) === (rel === '' ? '.' : rel)) this.#touch(known, false);
      return;
    }
    if (name.startsWith(TEMP_PREFIX)) return;
    if (this.options.only !== undefined && name !== this.options.only.name) return;
    this.#touch(rel === '' ? name : `${rel}/${name}`, type === 'change');
  }

  #touch(rel: string, modified: boolean): void {
    this.#touched.set(rel, (this.#touched.get(rel) ?? false) || modified);
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#flushing = this.#flushing.then(() => this.#flush()).catch((err: unknown) => this.#fail(err));
    }, this.options.debounceMs);
  }

  async #flush(): Promise<void> {
    if (this.#closed) return;
    const touched = this.#touched;
    this.#touched = new Map();
    if ((await snapshotOf(this.options.hostDir))?.ino !== this.#rootIno) {
      this.#endBecauseRootWent();
      return;
    }
    const observations: Observation[] = [];
    for (const [rel, modified] of touched) {
      observations.push({
        rel,
        before: this.#known.get(rel),
        now: await snapshotOf(this.#host(rel)),
        modified,
      });
    }
    for (const { rel, now } of observations) {
      if (now === undefined) this.#known.delete(rel);
      else this.#known.set(rel, now);
    }
    const changes: Change[] = [];
    for (const change of classifyChanges(observations))
      changes.push(change, ...(await this.#followDirectory(change)));
    if (changes.length > 0 && !this.#closed)
      this.options.onEvents(changes.map((change) => this.#eventOf(change)));
  }

  /** Keeps the set of watched directories in step with a directory's change. */
  async #followDirectory(change: Change): Promise<Change[]> {
    if (change.kind !== 'dir') return [];
    if (change.event === 'remove') this.#forget(change.rel);
    if (change.event === 'rename') this.#rekey(change.oldRel, change.rel);
    const appeared = change.event === 'create' || change.event === 'rename';
    return appeared && this.options.recursive ? this.#watchDirectory(change.rel, true) : [];
  }

  #forget(dir: string): void {
    this.#unwatchTree(dir);
    for (const rel of Array.from(this.#known.keys()).filter((known) => isUnder(known, dir)))
      this.#known.delete(rel);
  }

  /** A renamed directory keeps what is known about its contents, under the new name. */
  #rekey(from: string, to: string): void {
    this.#unwatchTree(from);
    for (const [rel, snapshot] of Array.from(this.#known).filter(([known]) => isUnder(known, from))) {
      this.#known.delete(rel);
      this.#known.set(`${to}${rel.slice(from.length)}`, snapshot);
    }
  }

  #unwatchTree(dir: string): void {
    const under = Array.from(this.#watchers.keys()).filter((rel) => rel === dir || isUnder(rel, dir));
    for (const rel of under) this.#unwatch(rel);
  }

  #unwatch(rel: string): void {
    this.#watchers.get(rel)?.close();
    this.#watchers.delete(rel);
  }

  #eventOf(change: Change): WatchEvent {
    const base = { event: change.event, path: this.#display(change.rel), kind: change.kind };
    return change.event === 'rename' ? { ...base, old_path: this.#display(change.oldRel) } : base;
  }

  #endBecauseRootWent(): void {
    const only = this.options.only;
    const gone: WatchEvent =
      only === undefined
        ? { event: 'remove', path: this.options.displayDir, kind: 'dir' }
        : { event: 'remove', path: only.display, kind: this.#known.get(only.name)?.kind ?? 'file' };
    this.close();
    this.options.onEvents([gone]);
    this.options.onEnd();
  }

  #fail(err: unknown): void {
    if (this.#closed) return;
    this.close();
    this.options.onEnd(SbxError.from(err));
  }
}
