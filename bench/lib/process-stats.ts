/** Memory and CPU time of other processes, read from /proc (Linux only). */
import { readdirSync, readFileSync } from 'node:fs';

export const KIB = 1024;
export const MIB = 1024 * 1024;

/** `Field:   1234 kB` of a /proc status-style file, in bytes; undefined when the field is absent. */
function kibField(text: string, field: string): number | undefined {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match?.[1] === undefined ? undefined : Number(match[1]) * KIB;
}

/** Resident set size (VmRSS) of `pid` in bytes. */
export function rssBytes(pid: number): number {
  const rss = kibField(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS');
  if (rss === undefined) throw new Error(`process ${pid} has no VmRSS (a zombie?)`);
  return rss;
}

/**
 * Proportional set size of `pid` in bytes: shared pages count a fraction per sharer,
 * so summing it over many processes running the same program does not overcount.
 */
export function pssBytes(pid: number): number {
  try {
    return kibField(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss') ?? 0;
  } catch {
    return 0;
  }
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** Fields after the name in /proc/<pid>/stat (which may hold spaces, so count from its `)`). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time (user + system) `pid` has used so far, in milliseconds; 10 ms resolution. */
export function cpuMs(pid: number): number {
  const fields = statFields(pid);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** Parent pid (field 4 of /proc/<pid>/stat). */
function parentOf(pid: number): number | undefined {
  try {
    return Number(statFields(pid)[1]);
  } catch {
    return undefined;
  }
}

/** Every live descendant of `root`, at any depth. */
export function descendantsOf(root: number): number[] {
  const byParent = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const parent = parentOf(pid);
    if (parent !== undefined) byParent.set(parent, [...(byParent.get(parent) ?? []), pid]);
  }
  const found: number[] = [];
  const queue = [root];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const kids = byParent.get(next) ?? [];
    found.push(...kids);
    queue.push(...kids);
  }
  return found;
}

export interface RssTrace {
  readonly maxBytes: number;
  readonly samples: number;
}

/** Samples the RSS of `pid` every `intervalMs` until `stop` is called. */
export function sampleRss(pid: number, intervalMs = 50): { stop(): RssTrace } {
  let maxBytes = rssBytes(pid);
  let samples = 1;
  const timer = setInterval(() => {
    try {
      maxBytes = Math.max(maxBytes, rssBytes(pid));
      samples += 1;
    } catch {
      // The process ended; the caller finds out from its own request.
    }
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      try {
        maxBytes = Math.max(maxBytes, rssBytes(pid));
        samples += 1;
      } catch {
        // As above.
      }
      return { maxBytes, samples };
    },
  };
}
