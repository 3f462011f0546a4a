import { toTimestamp, type ProcessInfo } from '@sbx/protocol';
import type { BackgroundProcess } from '../../domain/processes/background-process.js';

export function processInfoOf(entry: BackgroundProcess): ProcessInfo {
  const { info, output, status, exitedAt } = entry;
  return {
    process_id: info.id,
    pid: entry.pid,
    tag: info.tag ?? null,
    argv: info.argv === undefined ? null : [...info.argv],
    cmd: info.cmd ?? null,
    cwd: info.cwd,
    status: status === undefined ? 'running' : 'exited',
    exit_code: status?.exitCode ?? null,
    signal: status?.signal ?? null,
    started_at: toTimestamp(info.startedAt),
    exited_at: exitedAt === undefined ? null : toTimestamp(exitedAt),
    started_by: info.startedBy,
    stdin_open: entry.stdinOpen,
    stdout_bytes: output.stdout.totalBytes,
    stderr_bytes: output.stderr.totalBytes,
    stdout_dropped_bytes: output.stdout.droppedBytes,
    stderr_dropped_bytes: output.stderr.droppedBytes,
  };
}
