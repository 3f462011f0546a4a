import { closeSync, readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

/**
 * Closes every descriptor above stdio that this process inherited open across exec.
 * Node opens its own descriptors close-on-exec, so a descriptor without the flag came
 * from whoever started us (a shell, a CI runner, a supervisor) and would otherwise
 * pass down to every process we start, user code included. Returns what it closed.
 */
export function closeInheritedDescriptors(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fdinfo');
  } catch {
    return []; // not Linux: nothing to inspect
  }
  const closed: number[] = [];
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || fd <= 2 || !inheritable(fd)) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // closed meanwhile (the directory's own descriptor)
    }
  }
  return closed;
}

function inheritable(fd: number): boolean {
  try {
    const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
    return flags !== undefined && (Number.parseInt(flags, 8) & O_CLOEXEC) === 0;
  } catch {
    return false;
  }
}
