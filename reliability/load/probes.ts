// What the load suite reads of a broker process it started and of that broker's sandboxes,
// from outside, as an operator's monitoring would: /proc (RSS, PSS, descriptors, mounts,
// cgroup directories) and the broker's V8 heap through its inspector (inspector.ts). No
// jest here: soak.ts runs under plain tsx.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { descendantsOf, environmentOf } from '../../services/broker/test/process/broker-process.js';

export const MIB = 1024 * 1024;

/** `Field:   1234 kB` of a /proc status-style file, in bytes (0 when absent). */
function kibField(text: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match?.[1] === undefined ? 0 : Number(match[1]) * 1024;
}

function readOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    // The process ended while we looked.
    return fallback;
  }
}

/** Resident set size of `pid` in bytes (VmRSS); 0 once it is gone. */
export function rssOf(pid: number): number {
  return kibField(readOr(`/proc/${pid}/status`, ''), 'VmRSS');
}

/**
 * Proportional set size of `pid` in bytes: a page shared by n processes counts 1/n, so a
 * sum over 200 agents running one node binary does not count that binary 200 times.
 */
export function pssOf(pid: number): number {
  return kibField(readOr(`/proc/${pid}/smaps_rollup`, ''), 'Pss');
}

/** Open file descriptors of `pid` (sockets, pipes, files); 0 once it is gone. */
export function fdCountOf(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

function commOf(pid: number): string {
  return readOr(`/proc/${pid}/comm`, '').trim();
}

/**
 * The broker's sandbox agents, by sandbox id: the node processes below it whose environment
 * names a SANDBOX_ID (agent-environment.ts builds it from nothing; bwrap and the shells'
 * wrappers are not node).
 */
export function agentsOf(brokerPid: number): Map<string, number> {
  const agents = new Map<string, number>();
  for (const pid of descendantsOf(brokerPid)) {
    if (commOf(pid) !== 'node') continue;
    const sandboxId = environmentOf(pid, 'SANDBOX_ID');
    if (sandboxId !== undefined) agents.set(sandboxId, pid);
  }
  return agents;
}

/**
 * Mount points at or under `dir` in the mount namespace of `pid`, from its mountinfo
 * (field 5; spaces and the like come octal-escaped, `\040`).
 */
export function mountsUnder(dir: string, pid: number | 'self' = 'self'): string[] {
  return readOr(`/proc/${pid}/mountinfo`, '')
    .split('\n')
    .map((line) =>
      (line.split(' ')[4] ?? '').replaceAll(/\\(\d{3})/g, (_, octal: string) =>
        String.fromCharCode(parseInt(octal, 8)),
      ),
    )
    .filter((target) => target === dir || target.startsWith(`${dir}/`));
}

/**
 * The directories where the broker's sandboxes get cgroups (sandbox-cgroups.ts: nested
 * under the broker's own cgroup, in a `sbx` group; v2 at the root's `sbx`): one per v1
 * controller, or the one v2 directory. Empty where the broker may not make cgroups.
 */
export function sandboxCgroupParents(brokerPid: number, root = '/sys/fs/cgroup'): string[] {
  if (existsSync(path.join(root, 'cgroup.subtree_control'))) return [path.join(root, 'sbx')];
  const own = new Map<string, string>();
  for (const line of readOr(`/proc/${brokerPid}/cgroup`, '').split('\n')) {
    const [, names = '', where = '/'] = line.split(':');
    for (const name of names.split(',')) own.set(name, where);
  }
  return ['pids', 'memory', 'cpu']
    .map((controller) => path.join(root, controller, own.get(controller) ?? '/', 'sbx'))
    .filter((dir) => existsSync(path.dirname(dir)));
}

/**
 * Sandbox ids that have a cgroup directory under any of `parents`. Other brokers on the
 * host (other people's tests) share these parents: callers keep only the ids they know.
 */
export function sandboxesWithCgroups(parents: readonly string[]): Set<string> {
  const ids = new Set<string>();
  for (const parent of parents) {
    try {
      for (const entry of readdirSync(parent, { withFileTypes: true }))
        if (entry.isDirectory()) ids.add(entry.name);
    } catch {
      // No sandbox has had a cgroup under it yet.
    }
  }
  return ids;
}

/** Nearest-rank percentile; NaN when there is nothing to rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] ?? Number.NaN;
}

export const mib = (bytes: number): string => (bytes / MIB).toFixed(1);
