/**
 * The broker's agents run in process groups of their own (and so survive a kill of the
 * broker's group); what ties them to this run is the broker's data directory. Under
 * bubblewrap an agent's working directory is `/` of its view, so the directory is found on
 * the command line of the bwrap that builds the view (`--bind <data dir>/workspaces/…`,
 * `--tmpfs <data dir>`); without bubblewrap, in the working directory. Everything those
 * processes started (the agent under bwrap, the namespace holder, user processes) counts
 * too. Read from /proc, synchronously, so that an `exit` handler can use it too.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

function startedFor(pid: string, dir: string): boolean {
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    if (cwd === dir || cwd.startsWith(`${dir}/`)) return true;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .some((arg) => arg === dir || arg.startsWith(`${dir}/`));
  } catch {
    // It ended while we looked, or is not ours to inspect.
    return false;
  }
}

function parentOf(pid: string): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** Pids started for `dir` (working in it, or naming it on their command line) and all their descendants. */
export function processesOf(dir: string): number[] {
  const entries = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  const children = new Map<number, number[]>();
  const found = new Set<number>();
  for (const entry of entries) {
    const parent = parentOf(entry);
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    if (startedFor(entry, dir)) found.add(Number(entry));
  }
  const queue = [...found];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const child of children.get(next) ?? []) {
      if (found.has(child)) continue;
      found.add(child);
      queue.push(child);
    }
  }
  return [...found];
}

/** SIGKILLs every process of `dir`; returns how many there were. */
export function killProcessesOf(dir: string): number {
  const pids = processesOf(dir);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return pids.length;
}

/** Waits until no process of `dir` is left; throws after `timeoutMs`. */
export async function waitUntilNoneOf(dir: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let left = processesOf(dir).length; left > 0; left = processesOf(dir).length) {
    if (Date.now() > deadline) throw new Error(`${left} sandbox processes still running for ${dir}`);
    await sleep(100);
  }
}
