import { writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Joins the cgroups the broker made for this sandbox before anything is spawned, so the
 * agent and every process it starts (inheriting its cgroups) count against the sandbox's
 * limits, as they would inside a container. The agent does not shield itself from the
 * OOM killer: its children would inherit the shield (oom_score_adj and its floor), and a
 * full cgroup would then have no process left to kill.
 */
export function joinCgroups(dirs: readonly string[]): void {
  for (const dir of dirs) writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
}
