/**
 * CPU time of the Postgres backends serving one database, from /proc: a backend's process
 * title is `postgres: [<cluster>: ]<user> <database> <client> <state>`, readable by any user. Other
 * databases' backends (other people's tests on the same server) are left out, so the
 * floor's and the broker's database work can be compared per request.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpuMs } from '../lib/process-stats.js';

function backendsOf(database: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (title.startsWith('postgres: ') && title.includes(` ${database} `)) pids.push(Number(entry));
    } catch {
      // Ended while we looked.
    }
  }
  return pids;
}

export type CpuSnapshot = ReadonlyMap<number, number>;

export function snapshotBackends(database: string): CpuSnapshot {
  const snapshot = new Map<number, number>();
  for (const pid of backendsOf(database)) {
    try {
      snapshot.set(pid, cpuMs(pid));
    } catch {
      // Ended while we looked.
    }
  }
  return snapshot;
}

/** CPU ms the database's backends used between `before` and now (backends opened since count from 0). */
export function backendCpuSince(database: string, before: CpuSnapshot): number {
  let used = 0;
  for (const [pid, now] of snapshotBackends(database)) used += now - (before.get(pid) ?? 0);
  return used;
}
