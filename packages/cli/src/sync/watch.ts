import { watch, type FSWatcher } from 'node:fs';
import { EXIT, errorLine, exitCodeOf } from '../exit-codes.js';
import { ancestorsOf, walkLocal, type LocalEntry, type LocalTree } from './local-tree.js';
import { planSync } from './plan.js';
import { makeRemoteDir, pushFile, removeRemote } from './push.js';
import { runPool, TRANSFER_CONCURRENCY } from './pool.js';
import { conflictReason, type SyncTarget } from './sync-target.js';

/** Changes arriving this close together are pushed as one batch (an editor's save is several events). */
const DEBOUNCE_MS = 200;
/** Without a working recursive watcher the directory is rescanned this often. */
const POLL_MS = 1_000;
/** After the sandbox could not be reached, the next attempt waits this long. */
const RETRY_MS = 5_000;
/** The lease is extended by heartbeats only; watching for hours must keep the sandbox. */
const HEARTBEAT_MS = 60_000;

export interface WatchOptions {
  readonly target: SyncTarget;
  /** The local tree as the initial push left the sandbox. */
  readonly pushed: LocalTree;
  /** Aborted by Ctrl-C / SIGTERM: the pass in progress finishes, then the watch ends. */
  readonly stop: AbortSignal;
  /** Status lines (which watcher, retries): not changes. */
  readonly notice: (line: string) => void;
  readonly heartbeat: () => Promise<void>;
}

/**
 * Keeps pushing local changes until `stop`. A file-system event only says "something
 * changed": each debounced pass rescans the local tree (stat only, no sandbox calls) and
 * pushes what differs from the last pushed state, so no event detail needs to be trusted.
 * Changes made in the sandbox meanwhile are not looked at (the next full `sbx sync` is).
 */
export function watchPush(options: WatchOptions): Promise<void> {
  return new PushWatcher(options).run();
}

class PushWatcher {
  readonly #known: Map<string, LocalEntry>;
  /** Paths in conflict with the sandbox, left alone for the rest of the watch. */
  readonly #ignored = new Set<string>();
  /** Local names the sandbox would refuse, already reported. */
  readonly #refused = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<void> | undefined;
  #again = false;
  #finish: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  readonly #cleanups: (() => void)[] = [];

  constructor(private readonly o: WatchOptions) {
    this.#known = new Map(o.pushed);
    for (const change of o.target.report.summary().changes) {
      if (change.action === 'ignore') this.#refused.add(change.path); // reported by the initial push
    }
  }

  run(): Promise<void> {
    const done = new Promise<void>((resolve, reject) => (this.#finish = { resolve, reject }));
    if (this.o.stop.aborted) return Promise.resolve();
    const onStop = (): void => void this.#end();
    this.o.stop.addEventListener('abort', onStop, { once: true });
    this.#cleanups.push(() => this.o.stop.removeEventListener('abort', onStop));
    this.#startWatcher();
    // What changed between the initial push's scan and the watcher's start raised no event
    // (a big push takes long): one rescan now, against the pushed tree, catches it.
    this.#schedule(0);
    const beat = setInterval(() => void this.o.heartbeat().catch(() => undefined), HEARTBEAT_MS);
    this.#cleanups.push(() => clearInterval(beat));
    return done;
  }

  #startWatcher(): void {
    let watcher: FSWatcher;
    try {
      watcher = watch(this.o.target.localRoot, { recursive: true }, () => this.#schedule(DEBOUNCE_MS));
    } catch (err) {
      this.#poll(err);
      return;
    }
    watcher.on('error', (err) => {
      watcher.close();
      this.#poll(err);
    });
    this.#cleanups.push(() => watcher.close());
  }

  /** Node without recursive watching on this platform, or out of inotify watches: rescan on a timer. */
  #poll(reason: unknown): void {
    const why = reason instanceof Error ? reason.message : String(reason);
    this.o.notice(`sbx: no file-system events (${why}); rescanning every ${POLL_MS / 1000} s`);
    const poll = setInterval(() => this.#schedule(0), POLL_MS);
    this.#cleanups.push(() => clearInterval(poll));
  }

  #schedule(delayMs: number): void {
    if (this.o.stop.aborted) return;
    if (this.#pass !== undefined) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#startPass(), delayMs);
  }

  #startPass(): void {
    this.#pass = this.#pushChanges().then(
      () => this.#passEnded(DEBOUNCE_MS),
      (err: unknown) => {
        if (exitCodeOf(err) !== EXIT.unreachable) {
          this.#pass = undefined;
          void this.#end(err);
          return;
        }
        this.o.notice(`${errorLine(err)}; retrying in ${RETRY_MS / 1000} s`);
        this.#again = true;
        this.#passEnded(RETRY_MS);
      },
    );
  }

  #passEnded(nextDelayMs: number): void {
    this.#pass = undefined;
    if (this.#again && !this.o.stop.aborted) {
      this.#again = false;
      this.#schedule(nextDelayMs);
    }
  }

  async #end(err?: unknown): Promise<void> {
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
    clearTimeout(this.#timer);
    await this.#pass;
    if (err === undefined) this.#finish?.resolve();
    else this.#finish?.reject(err);
  }

  /** One pass: what changed locally since the last push goes to the sandbox. */
  async #pushChanges(): Promise<void> {
    const t = this.o.target;
    const current = this.#withoutIgnored(
      await walkLocal(t.localRoot, (rel, reason) => this.#refuse(rel, reason)),
    );
    const known = this.#withoutIgnored(this.#known);
    const plan = planSync(current, known, t.deleteExtra, (rel) =>
      sameEntry(current.get(rel), known.get(rel)),
    );
    if (!t.deleteExtra) this.#ignoreConflicts(plan.conflicts, current);
    for (const rel of known.keys()) if (!current.has(rel) && !t.deleteExtra) this.#known.delete(rel);
    for (const rel of plan.removals) {
      await removeRemote(t, rel, known.get(rel)?.type === 'dir');
      this.#forget(rel);
    }
    for (const rel of plan.mkdirs) {
      await makeRemoteDir(t, rel);
      this.#remember(rel, current);
    }
    await runPool(plan.copies, TRANSFER_CONCURRENCY, async (rel) => {
      await pushFile(t, current, rel);
      this.#remember(rel, current);
    });
    t.manifest.save();
  }

  /** A path that turned from file into directory (or back) here: the sandbox keeps the old one. */
  #ignoreConflicts(conflicts: readonly string[], current: LocalTree): void {
    for (const rel of conflicts) {
      this.#ignored.add(rel);
      const reason = conflictReason(current.get(rel)?.type === 'dir', 'here', 'in the sandbox');
      this.o.target.report.record({ action: 'conflict', path: rel, reason });
    }
  }

  /** A name the sandbox would refuse: reported once for the whole watch. */
  #refuse(rel: string, reason: string): void {
    if (this.#refused.has(rel)) return;
    this.#refused.add(rel);
    this.o.target.report.record({ action: 'ignore', path: rel, reason });
  }

  #withoutIgnored(tree: ReadonlyMap<string, LocalEntry>): Map<string, LocalEntry> {
    const isIgnored = (rel: string): boolean =>
      this.#ignored.has(rel) || ancestorsOf(rel).some((a) => this.#ignored.has(a));
    return new Map([...tree].filter(([rel]) => !isIgnored(rel)));
  }

  #remember(rel: string, current: LocalTree): void {
    const entry = current.get(rel);
    if (entry !== undefined) this.#known.set(rel, entry);
  }

  #forget(rel: string): void {
    for (const known of this.#known.keys()) {
      if (known === rel || known.startsWith(`${rel}/`)) this.#known.delete(known);
    }
  }
}

function sameEntry(a: LocalEntry | undefined, b: LocalEntry | undefined): boolean {
  return a !== undefined && b !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs;
}
