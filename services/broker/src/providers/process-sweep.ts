import { readdir, readlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Kills every process whose working directory is inside `dir` (Linux /proc; a no-op
 * elsewhere). Without bubblewrap a user process outlives a crashed or killed agent;
 * its working directory in the workspace is what still ties it to the sandbox.
 * Returns the pids signalled.
 */
export async function killProcessesWorkingIn(dir: string): Promise<number[]> {
  const root = path.resolve(dir);
  const entries = await readdir('/proc').catch((): string[] => []);
  const pids = entries
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => pid !== process.pid);
  const cwds = await Promise.all(pids.map((pid) => readlink(`/proc/${pid}/cwd`).catch(() => undefined)));
  const inside = pids.filter((_pid, i) => {
    const cwd = cwds[i];
    return cwd !== undefined && (cwd === root || cwd.startsWith(`${root}/`));
  });
  return inside.filter((pid) => {
    try {
      process.kill(pid, 'SIGKILL');
      return true;
    } catch {
      return false;
    }
  });
}
