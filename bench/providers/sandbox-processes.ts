/**
 * Which processes belong to one local sandbox, and what they cost: the agent (found by
 * the `SANDBOX_ID` of its environment) and everything it started — the bubblewrap holder
 * of the sandbox's namespaces, slirp4netns, the shells (nsenter, the drain wrapper, bash).
 * Read from /proc (Linux only).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { descendantsOf, KIB } from '../lib/process-stats.js';

function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/** What a process is there for; the rows of the per-sandbox breakdown. */
export type ProcessRole = 'agent' | 'namespace holder' | 'network' | 'shell' | 'other';

export const PROCESS_ROLES: readonly ProcessRole[] = [
  'agent',
  'namespace holder',
  'network',
  'shell',
  'other',
];

/** Memory of one process or a sum of them, in bytes. */
export interface Memory {
  /** Proportional set size: a page shared by n processes counts 1/n to each. */
  readonly pss: number;
  readonly rss: number;
  /** Unique set size (private clean + dirty): what ending the process would free. */
  readonly uss: number;
}

export const NO_MEMORY: Memory = { pss: 0, rss: 0, uss: 0 };

export function addMemory(a: Memory, b: Memory): Memory {
  return { pss: a.pss + b.pss, rss: a.rss + b.rss, uss: a.uss + b.uss };
}

function kibField(text: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match?.[1] === undefined ? 0 : Number(match[1]) * KIB;
}

/** From /proc/<pid>/smaps_rollup; nothing for a process that is gone. */
export function memoryOf(pid: number): Memory {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return NO_MEMORY;
  }
  return {
    pss: kibField(text, 'Pss'),
    rss: kibField(text, 'Rss'),
    uss: kibField(text, 'Private_Clean') + kibField(text, 'Private_Dirty'),
  };
}

function commandName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

function roleOf(name: string): ProcessRole {
  switch (name) {
    case 'bwrap':
    case 'sleep':
      return 'namespace holder';
    case 'slirp4netns':
      return 'network';
    case 'nsenter':
    case 'sh':
    case 'bash':
      return 'shell';
    default:
      return 'other';
  }
}

/** The agent of `sandboxId`: the process whose environment names it. */
export function agentPidOf(sandboxId: string): number {
  const wanted = `SANDBOX_ID=${sandboxId}`;
  const found = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(wanted);
      } catch {
        return false;
      }
    })
    .map(Number);
  // Its children get an environment built from nothing; a child caught between fork and
  // exec still has the agent's, so the agent is the one whose parent is not among them.
  const agents = found.filter((pid) => !found.includes(parentOf(pid)));
  if (agents.length !== 1) throw new Error(`expected one agent of ${sandboxId}, found ${agents.length}`);
  return agents[0]!;
}

/** The sandbox's memory by role, summed over its processes; also how many processes each role has. */
export function sandboxMemory(agentPid: number): Map<ProcessRole, { memory: Memory; count: number }> {
  const byRole = new Map<ProcessRole, { memory: Memory; count: number }>(
    PROCESS_ROLES.map((role) => [role, { memory: NO_MEMORY, count: 0 }]),
  );
  const processes: Array<[number, ProcessRole]> = [
    [agentPid, 'agent'],
    ...descendantsOf(agentPid).map((pid): [number, ProcessRole] => [pid, roleOf(commandName(pid))]),
  ];
  for (const [pid, role] of processes) {
    const entry = byRole.get(role)!;
    byRole.set(role, { memory: addMemory(entry.memory, memoryOf(pid)), count: entry.count + 1 });
  }
  return byRole;
}
