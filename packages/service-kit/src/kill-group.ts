import type { ChildProcess } from 'node:child_process';

/** SIGKILL to a detached child's whole process group, unless it has already ended. */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
