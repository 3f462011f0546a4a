/**
 * Answers of the agent's files and exec APIs. Their zod schemas live in the agent
 * (services/agent/src/http/{files,exec}/…-schemas.ts, "until packages/protocol takes
 * them"), which a package may not import; these mirror them field for field and should
 * be replaced by `@sbx/protocol` imports once the schemas move there.
 */
export interface FileEntry {
  readonly name: string;
  readonly type: 'file' | 'dir' | 'symlink' | 'other';
  readonly size: number;
  readonly mode: string;
  readonly mtime: string;
}

export interface PathInfo extends FileEntry {
  readonly path: string;
  readonly etag?: string;
}

export interface DirectoryListing {
  readonly path: string;
  readonly entries: readonly FileEntry[];
}

export interface ExecResult {
  readonly exit_code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdout_encoding: 'utf8' | 'base64';
  readonly stderr_encoding: 'utf8' | 'base64';
  readonly duration_ms: number;
  readonly timed_out: boolean;
  readonly stdout_truncated: boolean;
  readonly stderr_truncated: boolean;
}

export interface ProcessInfo {
  readonly process_id: string;
  readonly pid: number | null;
  readonly tag: string | null;
  readonly status: 'running' | 'exited';
  readonly exit_code: number | null;
  readonly signal: string | null;
  readonly stdin_open: boolean;
}

export interface StreamOutput {
  readonly data: string;
  readonly encoding: 'utf8' | 'base64';
  readonly bytes: number;
  readonly dropped_bytes: number;
}

export interface ProcessOutput {
  readonly process_id: string;
  readonly status: 'running' | 'exited';
  readonly exit_code: number | null;
  readonly signal: string | null;
  readonly stdout?: StreamOutput;
  readonly stderr?: StreamOutput;
}

/** One line of `GET /v1/processes/{id}/output?follow=true` (NDJSON): output as it came. */
export interface FollowOutputLine {
  readonly stream: 'stdout' | 'stderr';
  readonly data: string;
  readonly encoding: 'utf8' | 'base64';
}

/** The last line of a followed output: how the process ended. */
export interface ProcessExitStatus {
  readonly exit_code: number | null;
  readonly signal: string | null;
}

/** Trusts the agent's answer shape after a minimal object check (see the file comment). */
// oxlint-disable-next-line typescript/no-unnecessary-type-parameters -- T is the caller's expected answer shape
export function asObject<T>(value: unknown): T {
  if (typeof value !== 'object' || value === null)
    throw new TypeError('the sandbox answered with something other than a JSON object');
  // oxlint-disable-next-line typescript/no-unsafe-type-assertion -- the agent validates its answers; full schemas belong in @sbx/protocol (see above)
  return value as T;
}
