import type { ExitStatus } from '../exec/exit-status.js';
import type { ProcessGroup } from '../exec/process-group.js';
import type { ProcessOutput } from './process-output.js';

export interface BackgroundProcessInfo {
  readonly id: string;
  readonly tag: string | undefined;
  readonly argv: readonly string[] | undefined;
  readonly cmd: string | undefined;
  readonly cwd: string;
  /** The token subject that started it, for the audit trail. */
  readonly startedBy: string;
  readonly startedAt: Date;
}

/** A process started to keep running after the request: its group, its output, its end. */
export class BackgroundProcess {
  readonly info: BackgroundProcessInfo;
  readonly output: ProcessOutput;
  readonly #group: ProcessGroup;
  #exitedAt: Date | undefined;

  constructor(info: BackgroundProcessInfo, group: ProcessGroup, output: ProcessOutput, now: () => number) {
    this.info = info;
    this.#group = group;
    this.output = output;
    void group.exited.then((status) => this.#onExit(status, now));
  }

  #onExit(status: ExitStatus, now: () => number): void {
    this.#exitedAt = new Date(now());
    this.output.finish(status);
  }

  get id(): string {
    return this.info.id;
  }

  get pid(): number | null {
    return this.#group.pid ?? null;
  }

  get running(): boolean {
    return this.output.status === undefined;
  }

  get status(): ExitStatus | undefined {
    return this.output.status;
  }

  get exitedAt(): Date | undefined {
    return this.#exitedAt;
  }

  get stdinOpen(): boolean {
    return this.#group.stdinOpen;
  }

  get exited(): Promise<ExitStatus> {
    return this.#group.exited;
  }

  writeStdin(bytes: Buffer): void {
    this.#group.writeStdin(bytes);
  }

  endStdin(): void {
    this.#group.endStdin();
  }

  /** False when the process had already exited. */
  signal(signal: NodeJS.Signals): boolean {
    return this.#group.signal(signal);
  }

  kill(): void {
    this.#group.kill();
  }
}
