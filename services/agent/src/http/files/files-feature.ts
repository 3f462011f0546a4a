import type { AgentContext, AgentFeature } from '../../agent-context.js';
import { AtomicWriter } from '../../domain/files/atomic-writer.js';
import type { TreeWatcher } from '../../domain/files/watch/tree-watcher.js';
import { UsageCounter } from '../../domain/metrics/usage-counters.js';
import { FILES_DEFAULTS, type FilesDeps, type FilesOptions } from './files-deps.js';
import { filesRouter } from './files-router.js';
import { fileWatchRoute } from './watch-route.js';

export type { FilesOptions } from './files-deps.js';

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new RangeError(`files option ${name} must be a positive integer`);
  return value;
}

/**
 * Files over HTTP (read, write, list, stat, mkdir, move, delete; signed URLs for
 * download and upload) and file events over `WS /v1/files/watch`, all confined to the
 * workspace by one path guard. See src/domain/files/README.md for the rules.
 */
export function filesFeature(ctx: AgentContext, options: FilesOptions = {}): AgentFeature {
  const merged = { ...FILES_DEFAULTS, ...options };
  const settings = {
    maxUploadBytes: positiveInteger('maxUploadBytes', merged.maxUploadBytes),
    signedUrlMaxTtlSeconds: positiveInteger('signedUrlMaxTtlSeconds', merged.signedUrlMaxTtlSeconds),
    watchDebounceMs: positiveInteger('watchDebounceMs', merged.watchDebounceMs),
    maxWatchedDirectories: positiveInteger('maxWatchedDirectories', merged.maxWatchedDirectories),
    maxWatchBacklogBytes: positiveInteger('maxWatchBacklogBytes', merged.maxWatchBacklogBytes),
  };
  const guard = ctx.workspace;
  const watchers = new Set<TreeWatcher>();
  const bytes = { in: new UsageCounter(), out: new UsageCounter() };
  const deps: FilesDeps = { ctx, guard, writer: new AtomicWriter(guard), settings, watchers, bytes };
  return {
    name: 'files',
    router: filesRouter(deps),
    wsRoutes: [fileWatchRoute(deps)],
    stats: () => ({ file_watches: watchers.size }),
    report: () => ({ usage: { file_bytes_in: bytes.in.value, file_bytes_out: bytes.out.value } }),
    close: async () => {
      for (const watcher of watchers) watcher.close();
      watchers.clear();
    },
  };
}
