import { readFileSync } from 'node:fs';
import { constants } from 'node:os';

function isSignalName(name: string): name is NodeJS.Signals {
  return Object.hasOwn(constants.signals, name);
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>();
for (const [name, number] of Object.entries(constants.signals)) {
  if (isSignalName(name)) SIGNAL_NAMES.set(number, name);
}

export function signalName(signal: number): NodeJS.Signals | undefined {
  return SIGNAL_NAMES.get(signal);
}

/** Field 8 of /proc/<pid>/stat (tpgid); the name field may hold spaces, so count from its `)`. */
export function foregroundGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const tpgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[5]);
    return Number.isInteger(tpgid) && tpgid > 0 ? tpgid : undefined;
  } catch {
    return undefined;
  }
}

/** `target` < 0 signals a process group. */
export function sendSignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch {
    // Already gone: nothing left to signal.
  }
}
