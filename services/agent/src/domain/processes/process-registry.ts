import { randomBytes } from 'node:crypto';
import { SbxError, type AgentProcess } from '@sbx/protocol';
import type { CommandRequest } from '../exec/command.js';
import type { ProcessGroup } from '../exec/process-group.js';
import type { ProcessSupervisor } from '../exec/process-supervisor.js';
import { commandText, type FeatureReport } from '../metrics/usage-counters.js';
import { BackgroundProcess } from './background-process.js';
import { ProcessOutput } from './process-output.js';

export interface ProcessRegistryOptions {
  readonly supervisor: ProcessSupervisor;
  readonly now: () => number;
  /** Ring buffer size of each output stream. */
  readonly outputBufferBytes: number;
  /** How long an exited process stays listed (and its output readable). */
  readonly retentionMs: number;
  /** Exited processes kept at most; the oldest is forgotten first. */
  readonly maxRetained: number;
}

export interface StartBackground extends CommandRequest {
  readonly tag?: string | undefined;
  readonly startedBy: string;
}

/** The background processes of this sandbox, running or recently exited, by id. */
export class ProcessRegistry {
  readonly #options: ProcessRegistryOptions;
  readonly #processes = new Map<string, BackgroundProcess>();
  readonly #forgetTimers = new Map<string, NodeJS.Timeout>();
  /** Groups of background processes, to tell them from one-shot execs in the report. */
  readonly #groups = new WeakSet<ProcessGroup>();

  constructor(options: ProcessRegistryOptions) {
    this.#options = options;
  }

  async start(request: StartBackground): Promise<BackgroundProcess> {
    const output = new ProcessOutput(this.#options.outputBufferBytes);
    const group = await this.#options.supervisor.start(request, (stream, chunk) =>
      output.append(stream, chunk),
    );
    this.#groups.add(group);
    const info = {
      id: `proc_${randomBytes(12).toString('base64url')}`,
      tag: request.tag,
      argv: request.argv,
      cmd: request.cmd,
      cwd: request.cwd ?? '.',
      startedBy: request.startedBy,
      startedAt: new Date(this.#options.now()),
    };
    const entry = new BackgroundProcess(info, group, output, this.#options.now);
    this.#processes.set(info.id, entry);
    void entry.exited.then(() => this.#retire(info.id));
    return entry;
  }

  list(): BackgroundProcess[] {
    return [...this.#processes.values()];
  }

  get(id: string): BackgroundProcess {
    const entry = this.#processes.get(id);
    if (entry === undefined) throw new SbxError('NOT_FOUND', `no process ${id}`);
    return entry;
  }

  get runningCount(): number {
    let count = 0;
    for (const entry of this.#processes.values()) if (entry.running) count += 1;
    return count;
  }

  /**
   * For /healthz: the background processes (running or retained), then the one-shot execs
   * still running, and how many programs the supervisor started.
   */
  report(): FeatureReport {
    const supervisor = this.#options.supervisor;
    const background = this.list().map((entry): AgentProcess => ({
      id: entry.id,
      command: commandText(entry.info),
      started_at: entry.info.startedAt.toISOString(),
      running: entry.running,
    }));
    const oneShot = supervisor
      .programs()
      .filter((program) => !this.#groups.has(program.group))
      .map((program): AgentProcess => ({
        id: program.id,
        command: program.command,
        started_at: program.startedAt.toISOString(),
        running: true,
      }));
    return { processes: [...background, ...oneShot], usage: { commands_run: supervisor.commandsRun } };
  }

  /** Kills the process (its whole group), waits for it to end, and forgets it. */
  async remove(id: string): Promise<BackgroundProcess> {
    const entry = this.get(id);
    entry.kill();
    await entry.exited;
    this.#forget(id);
    return entry;
  }

  /** Forgets everything; the supervisor kills what still runs. */
  close(): void {
    for (const timer of this.#forgetTimers.values()) clearTimeout(timer);
    this.#forgetTimers.clear();
    this.#processes.clear();
  }

  #retire(id: string): void {
    if (!this.#processes.has(id)) return;
    const timer = setTimeout(() => this.#forget(id), this.#options.retentionMs);
    timer.unref();
    this.#forgetTimers.set(id, timer);
    const exited = this.list().filter((entry) => !entry.running);
    for (const old of exited.slice(0, Math.max(0, exited.length - this.#options.maxRetained)))
      this.#forget(old.id);
  }

  #forget(id: string): void {
    clearTimeout(this.#forgetTimers.get(id));
    this.#forgetTimers.delete(id);
    this.#processes.delete(id);
  }
}
