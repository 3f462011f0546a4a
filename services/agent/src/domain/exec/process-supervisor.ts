import type { Launcher } from '../../adapters/launcher.js';
import type { PathGuard } from '../files/path-guard.js';
import { launchSpecOf, type CommandRequest } from './command.js';
import { ProcessGroup, type ProcessGroupOptions } from './process-group.js';
import type { ProcessSlots } from './process-slots.js';

export interface ProcessSupervisorOptions {
  readonly workspace: PathGuard;
  readonly launcher: Launcher;
  readonly slots: ProcessSlots;
  /** After a program exits, how long its pipes may stay open (held by an escaped descendant). */
  readonly drainMs: number;
  readonly maxPendingStdinBytes: number;
}

/**
 * The one way user processes start: confine the working directory, build the
 * environment from scratch, let the launcher plan isolation, take a concurrency slot,
 * spawn the plan in its own process group. Knows every live group, to kill them all on shutdown.
 */
export class ProcessSupervisor {
  readonly #options: ProcessSupervisorOptions;
  readonly #live = new Set<ProcessGroup>();

  constructor(options: ProcessSupervisorOptions) {
    this.#options = options;
  }

  async start(request: CommandRequest, onOutput: ProcessGroupOptions['onOutput']): Promise<ProcessGroup> {
    const spec = await launchSpecOf(this.#options.workspace, request);
    const release = this.#options.slots.acquire();
    let group: ProcessGroup;
    try {
      group = ProcessGroup.start(this.#options.launcher.plan(spec), {
        onOutput,
        drainMs: this.#options.drainMs,
        maxPendingStdinBytes: this.#options.maxPendingStdinBytes,
      });
    } catch (err) {
      release();
      throw err;
    }
    this.#live.add(group);
    void group.exited.finally(() => {
      this.#live.delete(group);
      release();
    });
    return group;
  }

  get running(): number {
    return this.#live.size;
  }

  /** Kills every process group still running and waits for them to be gone. */
  async closeAll(): Promise<void> {
    const groups = [...this.#live];
    for (const group of groups) group.kill();
    await Promise.allSettled(groups.map((group) => group.exited));
  }
}
