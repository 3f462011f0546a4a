import {
  WS_CLOSE_CODES,
  type ServerFrame,
  type ShellClientFrame,
  type ShellStartFrame,
  type Signal,
} from '@sbx/protocol';
import { clientError, type SbxClientError } from './errors.js';
import { stdinFrames } from './frame-bytes.js';
import { Reconnector } from './reconnect.js';
import { shellGoneOnReconnect } from './shell-gone.js';
import { abortReason } from './retry.js';
import {
  newShellLink,
  ReplayCounter,
  type ShellExit,
  type ShellLink as Link,
  type ShellOptions,
} from './shell-link.js';
import {
  errorOfFrame,
  isReconnectable,
  openChannel,
  socketUrl,
  type Channel,
  type SocketContext,
} from './ws-channel.js';

export type { ShellExit, ShellOptions } from './shell-link.js';

export type ShellContext = SocketContext;

/**
 * An interactive PTY shell that survives dropped connections.
 *
 * Output arrives exactly once (see ReplayCounter). Output printed while disconnected that
 * no longer fits the agent's scrollback (1 MiB by default) is gone; nothing is ever repeated.
 *
 * Reconnecting waits (backoff with jitter) before every attempt and gives up after the
 * retry policy's `maxAttempts`; attempts are counted until a connection lasts (see
 * Reconnector), so an agent that accepts and then drops each socket is not hammered.
 */
export class Shell {
  #link: Link | undefined;
  #id = '';
  readonly #output = new ReplayCounter();
  #size: { cols: number; rows: number };
  #exit: ShellExit | undefined;
  #detached = false;
  /** Aborted by `detach()`: stops a reconnect in progress, whatever step it is at. */
  readonly #stop = new AbortController();
  readonly #reconnector: Reconnector;
  /** Frames typed while (re)connecting; sent, in order, as soon as the agent answered `start`. */
  #queued: ShellClientFrame[] = [];
  readonly #dataListeners = new Set<(data: Buffer) => void>();
  readonly #exitListeners = new Set<(exit: ShellExit) => void>();
  readonly #errorListeners = new Set<(err: unknown) => void>();
  #done!: { resolve: (exit: ShellExit) => void; reject: (err: unknown) => void };
  /**
   * Settles when the shell exits, or rejects when this client cannot follow it any more:
   * a reconnect that failed for good, or the agent ending the connection (1000) without
   * an exit status (a BackendUnavailableError; the shell may still run: reattach by `id`).
   * After `detach()` it stays pending: this client no longer learns how the shell ends.
   */
  readonly exited: Promise<ShellExit>;
  /** Reattaches done after a drop; for diagnostics and tests. */
  reconnects = 0;

  private constructor(
    private readonly ctx: ShellContext,
    size: { cols: number; rows: number },
  ) {
    this.#size = size;
    this.#reconnector = new Reconnector(ctx.retry, () => this.#what());
    this.exited = new Promise((resolve, reject) => (this.#done = { resolve, reject }));
    this.exited.catch(() => undefined);
  }

  /**
   * Opens a new shell; resolves once the agent runs it. A refused start rejects with the
   * agent's reason: NotFoundError, BadRequestError or ForbiddenError (`/proc`) for the cwd,
   * RateLimitedError when the sandbox runs as many shells as it allows.
   */
  static async open(ctx: ShellContext, options: ShellOptions = {}): Promise<Shell> {
    const shell = new Shell(ctx, { cols: options.cols ?? 80, rows: options.rows ?? 24 });
    await shell.#connect({
      type: 'start',
      ...shell.#size,
      output: 'binary',
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    return shell;
  }

  /** Attaches to an existing shell by id; its scrollback arrives first. */
  static async attach(ctx: ShellContext, id: string, options: ShellOptions = {}): Promise<Shell> {
    const shell = new Shell(ctx, { cols: options.cols ?? 80, rows: options.rows ?? 24 });
    shell.#id = id;
    await shell.#connect(shell.#reattachFrame());
    return shell;
  }

  /** The id to reattach by (`ready.shell_session_id`). */
  get id(): string {
    return this.#id;
  }

  /** Output bytes delivered so far. */
  get bytesReceived(): number {
    return this.#output.delivered;
  }

  /** The underlying socket, e.g. for a test that cuts the connection. */
  get socket(): Channel['socket'] | undefined {
    return this.#link?.channel?.socket;
  }

  onData(listener: (data: Buffer) => void): () => void {
    this.#dataListeners.add(listener);
    return () => this.#dataListeners.delete(listener);
  }

  onExit(listener: (exit: ShellExit) => void): () => void {
    this.#exitListeners.add(listener);
    return () => this.#exitListeners.delete(listener);
  }

  /** A connection that cannot be restored (rejected token, shell gone, reconnects used up). */
  onError(listener: (err: unknown) => void): () => void {
    this.#errorListeners.add(listener);
    return () => this.#errorListeners.delete(listener);
  }

  write(data: string | Uint8Array): void {
    for (const frame of stdinFrames(data)) this.#send(frame);
  }

  resize(cols: number, rows: number): void {
    this.#size = { cols, rows };
    this.#send({ type: 'resize', cols, rows });
  }

  signal(signal: Signal): void {
    this.#send({ type: 'signal', signal });
  }

  /** Ends the shell for every attached client. */
  close(): void {
    this.#send({ type: 'close' });
  }

  /**
   * Leaves the shell running in the sandbox (reattach later by `id`) and closes this
   * connection; a reconnect in progress stops, and a socket it opens is closed.
   */
  detach(): void {
    this.#detached = true;
    this.#stop.abort();
    this.#reconnector.dropped();
    this.#link?.channel?.close();
  }

  #send(frame: ShellClientFrame): void {
    const channel = this.#link?.channel;
    if (channel?.open === true) channel.send(frame);
    else this.#queued.push(frame);
  }

  #reattachFrame(): ShellStartFrame {
    return { type: 'start', ...this.#size, shell_session_id: this.#id, output: 'binary' };
  }

  /** Resolves once the agent answered `start` with `ready`; its `error` frame rejects, typed. */
  async #connect(start: ShellStartFrame): Promise<void> {
    const link = newShellLink();
    const channel = await openChannel(
      socketUrl(this.ctx, 'v1/shell/ws'),
      this.ctx.tokens,
      {
        onFrame: (frame) => this.#onFrame(link, frame),
        onBinary: (data) => this.#onOutput(link, data),
        onClose: (code, error) => this.#onClosed(link, code, error),
      },
      this.ctx.timeoutMs,
      { signal: this.#stop.signal, keepAlive: this.ctx.keepAlive },
    );
    link.channel = channel;
    channel.send(start);
    await link.start.wait(channel, this.ctx.timeoutMs, this.#stop.signal, this.#what());
  }

  #what(): string {
    return this.#id === '' ? 'shell' : `shell ${this.#id}`;
  }

  #onFrame(link: Link, frame: ServerFrame): void {
    switch (frame.type) {
      case 'ready':
        this.#onReady(link, frame);
        return;
      case 'stdout':
      case 'stderr':
        this.#onOutput(link, Buffer.from(frame.data, frame.encoding === 'base64' ? 'base64' : 'utf8'));
        return;
      case 'exit':
        this.#exit = { code: frame.code, signal: frame.signal };
        return;
      case 'error': {
        const error = errorOfFrame(frame, this.#what());
        if (link.start.pending) link.start.fail(error);
        else link.lastError = error;
        return;
      }
      case 'event':
      case 'auth_ok':
      case 'pong':
        return;
    }
  }

  /** Taken in the frame's own tick, so a close right behind `ready` already finds this link current. */
  #onReady(link: Link, frame: Extract<ServerFrame, { type: 'ready' }>): void {
    if (!link.start.pending) return;
    if (this.#detached) {
      link.start.fail(abortReason(this.#stop.signal));
      return;
    }
    if (frame.shell_session_id !== undefined) this.#id = frame.shell_session_id;
    this.#output.replayFrom(frame.output_offset);
    this.#link = link;
    link.start.succeed();
    this.#reconnector.connected();
    const queued = this.#queued;
    this.#queued = [];
    for (const queuedFrame of queued) link.channel?.send(queuedFrame);
  }

  #onOutput(link: Link, data: Buffer): void {
    if (link !== this.#link) return;
    const fresh = this.#output.fresh(data);
    if (fresh.length === 0) return;
    this.#reconnector.proven();
    for (const listener of this.#dataListeners) listener(fresh);
  }

  #onClosed(link: Link, code: number, error: SbxClientError | undefined): void {
    if (link.start.pending) {
      link.start.fail(
        link.lastError ??
          error ??
          clientError('BACKEND_UNAVAILABLE', `${this.#what()}: closed before it started`),
      );
      return;
    }
    if (link !== this.#link) return;
    this.#link = undefined;
    this.#reconnector.dropped();
    if (this.#exit !== undefined) {
      for (const listener of this.#exitListeners) listener(this.#exit);
      this.#done.resolve(this.#exit);
      return;
    }
    if (this.#detached) return;
    if (code === WS_CLOSE_CODES.NORMAL) this.#fail(this.#endedWithoutExit());
    else if (!isReconnectable(code)) this.#fail(link.lastError ?? error);
    else this.#reconnect(error);
  }

  /** Refreshes the token when it expired, then reattaches with backoff until the policy gives up. */
  #reconnect(dropError: SbxClientError | undefined): void {
    this.#reconnector
      .reconnect(() => this.#connect(this.#reattachFrame()), this.#stop.signal, dropError)
      .then(
        () => this.reconnects++,
        (err: unknown) => {
          if (!this.#detached) this.#fail(shellGoneOnReconnect(err));
        },
      );
  }

  #endedWithoutExit(): SbxClientError {
    return clientError(
      'BACKEND_UNAVAILABLE',
      `${this.#what()}: the sandbox ended the connection without an exit status; the shell may still run: attach to it by id`,
      { closeCode: WS_CLOSE_CODES.NORMAL },
    );
  }

  #fail(error: unknown): void {
    const reason = error ?? clientError('BACKEND_UNAVAILABLE', `${this.#what()}: the connection was lost`);
    for (const listener of this.#errorListeners) listener(reason);
    this.#done.reject(reason);
  }
}
