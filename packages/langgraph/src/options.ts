import { BrokerClient, type BrokerClientOptions } from '@sbx/client';

/** Options of `SbxSandbox`; every one is optional. */
export interface SbxSandboxOptions {
  /** The broker, or how to reach it; default: `SBX_BROKER_URL` and `SBX_API_KEY`. */
  readonly broker?: BrokerClient | BrokerClientOptions;
  /**
   * Single-sandbox mode: always this thread's sandbox. Absent (and `perThread` false), the
   * backend makes a new thread id at `initialize()`, as a provider provisions a new sandbox.
   * With `perThread`, the thread of calls made outside a LangGraph run.
   */
  readonly threadId?: string;
  /**
   * Serve many threads with one backend object: every call uses the sandbox of its run's
   * `configurable.thread_id`, or the session in `configurable.sandbox` when the run carries one.
   */
  readonly perThread?: boolean;
  /** The actor id of the backend's sessions (actor type `agent`). Default `agt_langgraph`. */
  readonly actorId?: string;
  /** A command's time limit in `execute` (default 120 s); past it, exit code 124. */
  readonly timeoutMs?: number;
  /** Output kept by `execute` (default 100 000 bytes); `truncated` says when more was written. */
  readonly maxOutputBytes?: number;
  /**
   * Files written (parents created) into every sandbox the backend opens, before its first
   * use; `create()` resolves only once they are. Relative paths are in the workspace; absolute
   * ones anywhere the sandbox's user may write (`/tmp/seed.txt`).
   */
  readonly initialFiles?: Readonly<Record<string, string | Uint8Array>>;
  /** Extend each session's lease on this interval (ms); off by default. */
  readonly heartbeatIntervalMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 100_000;
export const DEFAULT_ACTOR_ID = 'agt_langgraph';

/** A broker client made once, on first need: pre-negotiated sessions need none. */
export function lazyBroker(option: SbxSandboxOptions['broker']): () => BrokerClient {
  let made: BrokerClient | undefined;
  return () => {
    made ??= option instanceof BrokerClient ? option : new BrokerClient(option);
    return made;
  };
}

export function encodeInitialFiles(files: SbxSandboxOptions['initialFiles']): Array<[string, Uint8Array]> {
  return Object.entries(files ?? {}).map(([path, content]) => [
    path,
    typeof content === 'string' ? new TextEncoder().encode(content) : content,
  ]);
}

/**
 * A line for the agent's system prompt, so the model keeps its work where the thread's files
 * are (the workspace, which the thread's humans share) and knows other paths work too.
 */
export function workspacePrompt(workspacePath: string): string {
  return (
    `Your sandbox's workspace is ${workspacePath}: keep your files there, with absolute paths ` +
    `under it for every file tool (e.g. ${workspacePath}/report.py). Shell commands start there ` +
    `(it is also HOME). Other absolute paths are the sandbox's own and work too, as far as ` +
    `its user may read or write them (e.g. /tmp for scratch files).`
  );
}
