import { writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Joins the cgroups the broker made for this sandbox before anything is spawned, so the
 * agent and every process it starts (inheriting its cgroups) count against the sandbox's
 * limits, as they would inside a container. Where allowed, the memory limit's OOM kill
 * then never picks the agent that reports it.
 */
export function joinCgroups(dirs: readonly string[]): void {
  for (const dir of dirs) writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
  if (dirs.length > 0) protectFromOomKiller();
}

/** Best effort: lowering the score needs CAP_SYS_RESOURCE, which some containers withhold. */
function protectFromOomKiller(): void {
  try {
    writeFileSync('/proc/self/oom_score_adj', '-1000');
  } catch {
    // the kernel then weighs the agent like any other process of the sandbox
  }
}
