import type { AgentContext } from '../../agent-context.js';
import type { AtomicWriter } from '../../domain/files/atomic-writer.js';
import type { PathGuard } from '../../domain/files/path-guard.js';
import type { TreeWatcher } from '../../domain/files/watch/tree-watcher.js';
import type { UsageCounter } from '../../domain/metrics/usage-counters.js';

/** Limits of the files feature; every one is an option of `filesFeature` with the default below. */
export interface FilesOptions {
  /** Largest upload accepted, in bytes (checked against Content-Length and while streaming). Default 1 GiB. */
  readonly maxUploadBytes?: number;
  /**
   * Longest lifetime a signed file URL may have, in seconds. Default 900
   * (docs/protocol.md#signed-file-urls: 5–15 min).
   */
  readonly signedUrlMaxTtlSeconds?: number;
  /** Quiet time that ends a burst of file-system events before they are classified and sent. Default 50 ms. */
  readonly watchDebounceMs?: number;
  /** Most directories one recursive watch may cover (one inotify watch each). Default 4096. */
  readonly maxWatchedDirectories?: number;
  /** Unsent watch events a slow client may let pile up before it is disconnected. Default 1 MiB. */
  readonly maxWatchBacklogBytes?: number;
}

export type FilesSettings = Required<FilesOptions>;

export const FILES_DEFAULTS: FilesSettings = {
  maxUploadBytes: 1024 ** 3,
  signedUrlMaxTtlSeconds: 900,
  watchDebounceMs: 50,
  maxWatchedDirectories: 4096,
  maxWatchBacklogBytes: 1024 ** 2,
};

/** What every files route and the watch endpoint are built from. */
export interface FilesDeps {
  readonly ctx: AgentContext;
  readonly guard: PathGuard;
  readonly writer: AtomicWriter;
  readonly settings: FilesSettings;
  /** Live watchers, closed with the feature. */
  readonly watchers: Set<TreeWatcher>;
  /** Bytes of file content written by uploads (`in`) and sent by downloads (`out`), for /healthz. */
  readonly bytes: { readonly in: UsageCounter; readonly out: UsageCounter };
}
