import type { Launcher } from '../../adapters/launcher.js';
import type { PathGuard } from '../files/path-guard.js';
import { commandText } from '../metrics/usage-counters.js';
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
  /** The clock of `started_at` in reports; default `Date.now`. */
  readonly now?: () => number;
  /** The client policy's variables, read at each start (they may change); absent: none. */
  readonly sandboxEnv?: (() => Readonly<Record<string, string>>) | undefined;
}

/** A program the supervisor started and that still runs. */
export interface LiveProgram {
  /** `exec_<n>`, n counting the programs this supervisor started. */
  readonly id: string;
  readonly group: ProcessGroup;
  /** See `commandText`: at most 200 characters. */
  readonly command: string;
  readonly startedAt: Date;
}

/**
 * The one way user processes start: confine the working directory, build the
 * environment from scratch, let the launcher plan isolation, take a concurrency slot,
 * spawn the plan in its own process group. Knows every live group, to kill them all on shutdown.
 */
export class ProcessSupervisor {
  readonly #options: ProcessSupervisorOptions;
  readonly #live = new Map<ProcessGroup, LiveProgram>();
  /** Programs started since the agent started, whatever route asked (usage accounting). */
  #started = 0;

  constructor(options: ProcessSupervisorOptions) {
    this.#options = options;
  }

  async start(request: CommandRequest, onOutput: ProcessGroupOptions['onOutput']): Promise<ProcessGroup> {
    const spec = await launchSpecOf(this.#options.workspace, request, this.#options.sandboxEnv?.());
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
    this.#started += 1;
    this.#live.set(group, {
      id: `exec_${this.#started}`,
      group,
      command: commandText(request),
      startedAt: new Date((this.#options.now ?? Date.now)()),
    });
    void group.exited.finally(() => {
      this.#live.delete(group);
      release();
    });
    return group;
  }

  get running(): number {
    return this.#live.size;
  }

  /** Every program started so far, one each, running or not. */
  get commandsRun(): number {
    return this.#started;
  }

  /** The programs still running, oldest first. */
  programs(): LiveProgram[] {
    return [...this.#live.values()];
  }

  /** Kills every process group still running and waits for them to be gone. */
  async closeAll(): Promise<void> {
    const groups = [...this.#live.keys()];
    for (const group of groups) group.kill();
    await Promise.allSettled(groups.map((group) => group.exited));
  }
}
