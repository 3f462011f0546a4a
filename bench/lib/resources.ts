/**
 * Everything a benchmark run starts or creates (child processes, temporary directories)
 * is registered here, so that it is gone when the run ends — normally, on an error, or
 * on Ctrl-C. Children run in their own process group: killing the group also takes
 * whatever they started (tsx's esbuild service, exec'd programs).
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is already gone.
  }
}

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** The last resort: synchronous, because an `exit` handler cannot wait. */
function releaseNow(): void {
  for (const child of children) killGroup(child, 'SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

process.once('exit', releaseNow);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    releaseNow();
    process.exit(130);
  });
}

/** Spawns `command` as the leader of a new process group that the run will kill at the latest on exit. */
export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  children.add(child);
  child.once('exit', () => {
    // The leader is gone, but a descendant may still hold the group.
    killGroup(child, 'SIGKILL');
    children.delete(child);
  });
  return child;
}

/** SIGTERM, then SIGKILL to the whole group when it has not exited within `graceMs`. */
export async function stopTracked(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (isRunning(child)) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(graceMs)]);
  }
  killGroup(child, 'SIGKILL');
  children.delete(child);
}

/** A fresh directory under the system temp dir, removed by `removeTempDir` or at exit. */
export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir: string): void {
  // A broker stopped before it closed (killed after its grace, or slowed by --cpu-prof) can
  // leave sandbox workspace images mounted under its data directory.
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((target) => target.startsWith(`${dir}/`));
  for (const target of mounts) spawnSync('umount', ['-l', target]);
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

/** Stops every child still running and removes every temporary directory. */
export async function releaseAll(): Promise<void> {
  await Promise.all([...children].map((child) => stopTracked(child)));
  for (const dir of tempDirs) removeTempDir(dir);
}
