/**
 * The broker's agents run in process groups of their own (and so survive a kill of the
 * broker's group); what still ties them to this run is their working directory inside
 * the broker's data directory. Read from /proc, synchronously, so that an `exit` handler
 * can use it too.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Pids whose working directory is `dir` or lies inside it. */
export function processesWorkingIn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) pids.push(Number(entry));
    } catch {
      // It ended while we looked, or is not ours to inspect.
    }
  }
  return pids;
}

/** SIGKILLs every process working in `dir`; returns how many there were. */
export function killProcessesWorkingIn(dir: string): number {
  const pids = processesWorkingIn(dir);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return pids.length;
}

/** Waits until nothing works in `dir` any more; throws after `timeoutMs`. */
export async function waitUntilNoneWorkIn(dir: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let left = processesWorkingIn(dir).length; left > 0; left = processesWorkingIn(dir).length) {
    if (Date.now() > deadline) throw new Error(`${left} sandbox processes still running in ${dir}`);
    await sleep(100);
  }
}
