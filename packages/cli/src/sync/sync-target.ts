import type { FilesApi } from '@sbx/client';
import type { SyncManifest } from './manifest.js';
import type { SyncReport } from './report.js';

/** Everything one sync between a local directory and a sandbox directory works with. */
export interface SyncTarget {
  readonly files: FilesApi;
  readonly thread: string;
  /** Absolute local directory. */
  readonly localRoot: string;
  /**
   * Sandbox directory, absolute as the sandbox's processes see it (`/workspace/proj`;
   * `/workspace` itself for `t1:`), the form the agent's answers use.
   */
  readonly remoteRoot: string;
  readonly manifest: SyncManifest;
  readonly report: SyncReport;
  /** `--delete`: remove what the source side does not have. */
  readonly deleteExtra: boolean;
  /** The thread's sandbox as cached before the sync began (or as first joined, when none was). */
  readonly sandboxAtStart: string | undefined;
  /** The thread's sandbox now (a renegotiation during the sync may have moved to another). */
  readonly currentSandbox: () => string | undefined;
}

/** Why a conflicting path was left alone, as the report shows it. */
export function conflictReason(sourceIsDir: boolean, sourceSide: string, targetSide: string): string {
  const [here, there] = sourceIsDir ? ['a directory', 'a file'] : ['a file', 'a directory'];
  return `${here} ${sourceSide}, ${there} ${targetSide}; --delete replaces it`;
}
