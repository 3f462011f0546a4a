import type { ExecStartFrame, ServerFrame, Signal } from '@sbx/protocol';
import { AsyncQueue, deliveredByCallback } from './async-queue.js';
import { clientError, type SbxClientError } from './errors.js';
import { bytesOf, stdinFrames } from './frame-bytes.js';
import { abortReason, withRetry } from './retry.js';
import { StartHandshake } from './start-handshake.js';
import { errorOfFrame, openChannel, socketUrl, type Channel, type SocketContext } from './ws-channel.js';

export type Command =
  | { readonly argv: readonly string[]; readonly cmd?: never }
  | { readonly cmd: string; readonly argv?: never };

export interface CommandOptions {
  /**
   * Working directory, a sandbox path: relative to the workspace (`src`) or absolute
   * (`/workspace/src`, `/tmp`). Default: the workspace, which is also HOME.
   */
  readonly cwd?: string;
  readonly env?: Record<string, string>;
}

export interface ExecStreamOptions extends CommandOptions {
  /**
   * UTF-8 text written to stdin before anything passed to `write`. Sent as stdin frames
   * once the program runs (never inside `start`), so any size fits the agent's frame limit.
   */
  readonly stdin?: string;
  /** The program's time limit (the agent's default when absent); it is then terminated. */
  readonly timeoutMs?: number;
  /** Kills the program; `wait()` and the iterables then reject with the abort reason. */
  readonly signal?: AbortSignal;
  /** Receive stdout by callback; without it the chunks queue for `for await (… of stdout)`. */
  readonly onStdout?: (data: Buffer) => void;
  readonly onStderr?: (data: Buffer) => void;
}

export interface ExecExit {
  /** The exit code; 128 + n when signal n ended the program. */
  readonly code: number;
  /** The signal that ended it, if one did. */
  readonly signal?: string | undefined;
  /** The program ran longer than `timeoutMs` and was terminated. */
  readonly timedOut: boolean;
}

type OutputName = 'stdout' | 'stderr';

/**
 * One program over `WS /v1/exec/ws`, its output streamed as it is written. Bytes arrive
 * exactly: the agent sends UTF-8 text or base64 of the raw bytes, and this decodes both.
 *
 * The agent ends a program whose socket closes, so a dropped connection is not reopened:
 * `wait()` rejects, and so does iterating `stdout`/`stderr` (a BackendUnavailableError that
 * says the output is incomplete), never ending as if the output were whole. A connection
 * that dies silently (a partition) is noticed by the keep-alive (see KeepAlive). A token
 * refreshed meanwhile re-authenticates the open socket, so a long program outlives its
 * first token.
 */
export class ExecStream {
  #channel!: Channel;
  #processId = '';
  #exit: ExecExit | undefined;
  #timedOut = false;
  #lastError: SbxClientError | undefined;
  readonly #start = new StartHandshake();
  readonly #queues: Partial<Record<OutputName, AsyncQueue<Buffer>>> = {};
  readonly stdout: AsyncIterable<Buffer>;
  readonly stderr: AsyncIterable<Buffer>;
  #done!: { resolve: (exit: ExecExit) => void; reject: (err: unknown) => void };
  readonly #exited: Promise<ExecExit>;

  private constructor(private readonly options: ExecStreamOptions) {
    this.stdout = this.#output('stdout', options.onStdout === undefined, 'onStdout');
    this.stderr = this.#output('stderr', options.onStderr === undefined, 'onStderr');
    this.#exited = new Promise((resolve, reject) => (this.#done = { resolve, reject }));
    this.#exited.catch(() => undefined);
  }

  /** Resolves once the program runs. Connecting is retried (nothing has run yet); a rejected token is not. */
  static async start(
    ctx: SocketContext,
    command: Command,
    options: ExecStreamOptions = {},
  ): Promise<ExecStream> {
    const stream = new ExecStream(options);
    const signal = options.signal;
    stream.#channel = await withRetry(
      () =>
        openChannel(
          socketUrl(ctx, 'v1/exec/ws'),
          ctx.tokens,
          { onFrame: (frame) => stream.#onFrame(frame), onClose: (_code, err) => stream.#onClosed(err) },
          ctx.timeoutMs,
          { signal, keepAlive: ctx.keepAlive },
        ),
      ctx.retry,
      signal,
    );
    stream.#channel.send(startFrame(command, options));
    await stream.#start.wait(stream.#channel, ctx.timeoutMs, signal, 'exec');
    if (options.stdin !== undefined && options.stdin !== '') stream.write(options.stdin);
    signal?.addEventListener('abort', stream.#onAbort, { once: true });
    return stream;
  }

  /** The agent's id of this run (`ready.process_id`). */
  get processId(): string {
    return this.#processId;
  }

  /**
   * Stops reading output until `resumeOutput()`: TCP then pushes back on the agent, which
   * pauses the program at its own high-water mark (a consumer slower than the program).
   */
  pauseOutput(): void {
    this.#channel.pause();
  }

  resumeOutput(): void {
    this.#channel.resume();
  }

  /** Drops the connection at once; the agent ends a program whose socket closed. */
  abandon(): void {
    this.#channel.socket.terminate();
  }

  /** The socket, e.g. for a test that cuts the connection. */
  get socket(): Channel['socket'] {
    return this.#channel.socket;
  }

  /** Writes to the program's stdin: text as UTF-8, bytes exactly. */
  write(data: string | Uint8Array): void {
    for (const frame of stdinFrames(data)) this.#channel.send(frame);
  }

  /** Closes the program's stdin (end of input, e.g. for `cat` or `wc`). */
  closeStdin(): void {
    for (const frame of stdinFrames('', true)) this.#channel.send(frame);
  }

  /** Sends a signal to the program's process group (default SIGTERM). */
  kill(signal: Signal = 'SIGTERM'): void {
    this.#channel.send({ type: 'signal', signal });
  }

  /** The exit, once the program ended and its output was delivered. */
  wait(): Promise<ExecExit> {
    return this.#exited;
  }

  readonly #onAbort = (): void => {
    this.#fail(abortReason(this.options.signal));
    this.#channel.close();
  };

  #output(name: OutputName, queued: boolean, callback: string): AsyncIterable<Buffer> {
    if (!queued) return deliveredByCallback(name, callback);
    const queue = new AsyncQueue<Buffer>(name);
    this.#queues[name] = queue;
    return queue;
  }

  #onFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case 'ready':
        this.#processId = frame.process_id ?? '';
        this.#start.succeed();
        return;
      case 'stdout':
      case 'stderr':
        this.#deliver(frame.type, bytesOf(frame));
        return;
      case 'exit':
        this.#exit = { code: frame.code, signal: frame.signal, timedOut: this.#timedOut };
        return;
      case 'error': {
        const error = errorOfFrame(frame, 'exec');
        if (this.#start.pending) this.#start.fail(error);
        else if (error.code === 'TIMEOUT') this.#timedOut = true;
        else this.#lastError = error;
        return;
      }
      case 'auth_ok':
      case 'event':
      case 'pong':
        return;
    }
  }

  #deliver(name: OutputName, data: Buffer): void {
    const callback = name === 'stdout' ? this.options.onStdout : this.options.onStderr;
    if (callback === undefined) this.#queues[name]?.push(data);
    else callback(data);
  }

  #onClosed(error: SbxClientError | undefined): void {
    this.options.signal?.removeEventListener('abort', this.#onAbort);
    const dropped = clientError(
      'BACKEND_UNAVAILABLE',
      'exec: the connection dropped before the program exited; the agent ended it',
    );
    if (this.#start.pending) {
      this.#start.fail(this.#lastError ?? error ?? dropped);
      return;
    }
    if (this.#exit === undefined) {
      this.#fail(this.#lastError ?? cutShort(this.#processId, error) ?? dropped);
      return;
    }
    for (const queue of Object.values(this.#queues)) queue.end();
    this.#done.resolve(this.#exit);
  }

  #fail(error: unknown): void {
    for (const queue of Object.values(this.#queues)) queue.fail(error);
    this.#done.reject(error);
  }
}

/**
 * A connection lost before the exit (a drop, a silence): the message says what it means for
 * the output read so far, so a partial output is never taken for the whole.
 */
function cutShort(processId: string, error: SbxClientError | undefined): SbxClientError | undefined {
  if (error?.code !== 'BACKEND_UNAVAILABLE') return error;
  const message =
    `exec ${processId}: the connection was lost before the program's exit arrived (${error.message}); ` +
    'the output read is incomplete, and the program is not resumed: the agent ends it once it sees the connection closed (unless it finished first)';
  return clientError(error.code, message, {
    cause: error,
    ...(error.closeCode === undefined ? {} : { closeCode: error.closeCode }),
  });
}

function startFrame(command: Command, options: ExecStreamOptions): ExecStartFrame {
  return {
    type: 'start',
    ...(command.argv === undefined ? { cmd: command.cmd } : { argv: [...command.argv] }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.timeoutMs === undefined ? {} : { timeout_ms: options.timeoutMs }),
  };
}
