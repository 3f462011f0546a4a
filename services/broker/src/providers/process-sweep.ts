import { readdir, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import type { LiveAgent } from './live-agent.js';
import type { LocalSettings } from './local-settings.js';
import type { SandboxCgroups } from './sandbox-cgroups.js';
import type { SerialQueue } from './serial-queue.js';

/** A process as a sweep sees it: its working directory and its owner, when still readable. */
interface ProcessEntry {
  readonly pid: number;
  readonly cwd: string | undefined;
  readonly uid: string | undefined;
}

async function scanProcesses(): Promise<ProcessEntry[]> {
  const entries = await readdir('/proc').catch((): string[] => []);
  const pids = entries
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => pid !== process.pid);
  return Promise.all(
    pids.map(async (pid) => ({
      pid,
      cwd: await readlink(`/proc/${pid}/cwd`).catch(() => undefined),
      uid: await readFile(`/proc/${pid}/status`, 'utf8')
        .then((status) => /^Uid:\s+(\d+)/m.exec(status)?.[1])
        .catch(() => undefined),
    })),
  );
}

/**
 * A scan of /proc begun after the call, shared by every sweep asking meanwhile. Each
 * sweep read all of /proc twice on node's four I/O threads, so a burst of releases took
 * time in the square of the sandboxes: with 730 processes on the host, 30 sweeps at once
 * took 10 s, 30 releases at once 19 s each (reliability/load). A process started before a
 * sweep asks is still seen: a scan already running is never joined, only the next one.
 */
let nextScan: Promise<ProcessEntry[]> | undefined;
let scanning: Promise<unknown> = Promise.resolve();

function freshScan(): Promise<ProcessEntry[]> {
  nextScan ??= scanning.then(() => {
    nextScan = undefined;
    const scan = scanProcesses();
    scanning = scan.catch(() => undefined);
    return scan;
  });
  return nextScan;
}

/**
 * Kills every process whose working directory is inside `dir` (Linux /proc; a no-op
 * elsewhere). Without bubblewrap a user process outlives a crashed or killed agent;
 * its working directory in the workspace is what still ties it to the sandbox.
 * Returns the pids signalled.
 */
export async function killProcessesWorkingIn(dir: string): Promise<number[]> {
  const root = path.resolve(dir);
  const inside = (await freshScan()).filter(
    ({ cwd }) => cwd !== undefined && (cwd === root || cwd.startsWith(`${root}/`)),
  );
  return killAll(inside.map(({ pid }) => pid));
}

/**
 * Kills every process of a sandbox's own host user: with bubblewrap they all die with
 * the sandbox's pid namespace; without it, this is what ends a double-forked escapee.
 */
export async function killProcessesOf(uid: number): Promise<number[]> {
  const owned = (await freshScan()).filter((entry) => entry.uid === String(uid));
  return killAll(owned.map(({ pid }) => pid));
}

function killAll(pids: readonly number[]): number[] {
  return pids.filter((pid) => {
    try {
      process.kill(pid, 'SIGKILL');
      return true;
    } catch {
      return false;
    }
  });
}

/** Whatever is left of a sandbox: processes in its workspace or of its own user, and its cgroups. */
export async function sweepSandbox(
  sandboxId: string,
  workspace: string,
  hostUid: number | undefined,
  cgroups: SandboxCgroups | undefined,
): Promise<void> {
  await killProcessesWorkingIn(workspace);
  if (hostUid !== undefined) await killProcessesOf(hostUid);
  await cgroups?.remove(sandboxId);
}

/**
 * Sweeps what a crashed agent left, in the sandbox's queue: a restart asked for meanwhile
 * waits until the leftovers are gone. A failure is logged, never thrown.
 */
export function sweepCrashed(
  queue: SerialQueue,
  settings: Pick<LocalSettings, 'cgroups' | 'logger'>,
  sandboxId: string,
  live: Pick<LiveAgent, 'paths' | 'record'>,
): void {
  queue
    .run(sandboxId, () =>
      sweepSandbox(sandboxId, live.paths.workspace, live.record.hostUid, settings.cgroups),
    )
    .catch((err: unknown) =>
      settings.logger.warn(
        { sandbox_id: sandboxId, err },
        'could not sweep the workspace of a crashed agent',
      ),
    );
}
