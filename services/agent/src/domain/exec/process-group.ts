import { spawn, type ChildProcess } from 'node:child_process';
import { SbxError } from '@sbx/protocol';
import type { LaunchPlan } from '../../adapters/launcher.js';
import { EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, type ExitStatus } from './exit-status.js';

export type OutputStream = 'stdout' | 'stderr';

export interface ProcessGroupOptions {
  readonly onOutput: (stream: OutputStream, chunk: Buffer) => void;
  /** After the program exits, how long pipes still held by an escaped descendant may stay open. */
  readonly drainMs?: number;
  /** Stdin bytes queued for a program that is not reading; beyond this, writes are refused. */
  readonly maxPendingStdinBytes?: number;
}

/** Not `instanceof Error`: errors from Node's internals may come from another realm (e.g. under jest). */
function errnoOf(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : 'UNKNOWN';
}

/**
 * A user program started in its own process group (`detached`), so that signals,
 * timeouts and kills reach everything it started. When the program itself exits, what
 * is left of its group is killed: a process's lifetime is its program's lifetime.
 */
export class ProcessGroup {
  readonly pid: number | undefined;
  readonly exited: Promise<ExitStatus>;
  #child: ChildProcess | undefined;
  #leaderExited = false;
  #stdinOpen = true;
  #killTimer: NodeJS.Timeout | undefined;
  readonly #maxPendingStdin: number;

  private constructor(
    child: ChildProcess | undefined,
    options: ProcessGroupOptions,
    file: string,
    failure?: unknown,
  ) {
    this.#child = child;
    this.pid = child?.pid;
    this.#maxPendingStdin = options.maxPendingStdinBytes ?? 1024 * 1024;
    this.exited =
      child === undefined
        ? Promise.resolve(this.#failed(file, failure, options))
        : this.#watch(child, file, options);
  }

  /** Spawns exactly the launcher's plan. A program that cannot start ends like a shell reports it (127/126). */
  static start(plan: LaunchPlan, options: ProcessGroupOptions): ProcessGroup {
    try {
      const child = spawn(plan.file, [...plan.args], {
        cwd: plan.cwd,
        env: { ...plan.env },
        detached: true,
        stdio: 'pipe',
        ...(plan.uid === undefined ? {} : { uid: plan.uid }),
        ...(plan.gid === undefined ? {} : { gid: plan.gid }),
      });
      return new ProcessGroup(child, options, plan.file);
    } catch (err) {
      return new ProcessGroup(undefined, options, plan.file, err);
    }
  }

  get running(): boolean {
    return this.pid !== undefined && !this.#leaderExited;
  }

  /** Sends `signal` to the whole group; false when nothing is running any more. */
  signal(signal: NodeJS.Signals): boolean {
    if (!this.running || this.pid === undefined) return false;
    try {
      process.kill(-this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** SIGTERM to the group, then SIGKILL once `graceMs` has passed. */
  terminate(graceMs: number): void {
    if (!this.signal('SIGTERM')) return;
    this.#killTimer ??= setTimeout(() => this.kill(), graceMs);
  }

  kill(): void {
    this.signal('SIGKILL');
  }

  /**
   * Queues `bytes` for the program's stdin. Returns false once the queue is long
   * (the caller should wait for `onStdinDrain`); refuses outright past the pending limit.
   */
  writeStdin(bytes: Buffer): boolean {
    const stdin = this.#child?.stdin;
    if (!this.running || !this.#stdinOpen || stdin === undefined || stdin === null)
      throw new SbxError('CONFLICT', 'stdin is closed');
    if (stdin.writableLength + bytes.length > this.#maxPendingStdin)
      throw new SbxError('RATE_LIMITED', 'the process is not reading its stdin; try again later', {
        retryAfterSeconds: 1,
      });
    return stdin.write(bytes);
  }

  /** Runs `callback` once the stdin queue has drained, or the process is gone. */
  onStdinDrain(callback: () => void): void {
    const stdin = this.#child?.stdin;
    if (stdin === undefined || stdin === null || !stdin.writableNeedDrain) {
      callback();
      return;
    }
    let called = false;
    const once = (): void => {
      if (called) return;
      called = true;
      stdin.off('drain', once);
      callback();
    };
    stdin.once('drain', once);
    void this.exited.then(once);
  }

  /** Closes stdin, after `lastBytes` if given (not subject to the pending limit): the program reads end of file. */
  endStdin(lastBytes?: Buffer): void {
    if (!this.#stdinOpen) return;
    this.#stdinOpen = false;
    if (lastBytes === undefined) this.#child?.stdin?.end();
    else this.#child?.stdin?.end(lastBytes);
  }

  get stdinOpen(): boolean {
    return this.#stdinOpen && this.running;
  }

  /** Stops reading output (the program blocks once the pipe fills): flow control for slow consumers. */
  pauseOutput(): void {
    this.#child?.stdout?.pause();
    this.#child?.stderr?.pause();
  }

  resumeOutput(): void {
    this.#child?.stdout?.resume();
    this.#child?.stderr?.resume();
  }

  #watch(child: ChildProcess, file: string, options: ProcessGroupOptions): Promise<ExitStatus> {
    child.stdout?.on('data', (chunk: Buffer) => options.onOutput('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => options.onOutput('stderr', chunk));
    // A program that stops reading makes writes fail with EPIPE; its exit status tells the story.
    child.stdin?.on('error', () => undefined);
    return new Promise((resolve) => {
      child.on('error', (err) => {
        if (child.pid === undefined) resolve(this.#failed(file, err, options));
      });
      child.once('exit', (code, signal) => {
        this.signal('SIGKILL');
        this.#leaderExited = true;
        this.#stdinOpen = false;
        clearTimeout(this.#killTimer);
        // What is left in the pipes is bounded now that the group is dead: read it even if a consumer paused.
        this.resumeOutput();
        const cut = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
        }, options.drainMs ?? 2000);
        child.once('close', () => {
          clearTimeout(cut);
          resolve({ exitCode: code, signal });
        });
      });
    });
  }

  #failed(file: string, err: unknown, options: ProcessGroupOptions): ExitStatus {
    this.#leaderExited = true;
    this.#stdinOpen = false;
    const errno = errnoOf(err);
    const reason =
      errno === 'ENOENT'
        ? 'command not found'
        : errno === 'EACCES'
          ? 'permission denied'
          : `cannot start (${errno})`;
    options.onOutput('stderr', Buffer.from(`${file}: ${reason}\n`));
    return { exitCode: errno === 'ENOENT' ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE, signal: null };
  }
}
