import type { ServerFrame, ShellClientFrame, ShellStartFrame, Signal } from '@sbx/protocol';
import type { SbxClientError } from './errors.js';
import { stdinFrames } from './frame-bytes.js';
import { reconnectWithBackoff } from './reconnect.js';
import { openChannel, isReconnectable, socketUrl, type Channel, type SocketContext } from './ws-channel.js';

export interface ShellOptions {
  readonly cols?: number;
  readonly rows?: number;
  readonly cwd?: string;
  readonly env?: Record<string, string>;
}

export type ShellContext = SocketContext;

export interface ShellExit {
  readonly code: number;
  readonly signal?: string | undefined;
}

/**
 * An interactive PTY shell that survives dropped connections.
 *
 * Exactly-once output: the agent replays a shell's scrollback from its oldest held byte
 * on every attach, and its `ready` frame says at which absolute output offset that
 * replay starts. The shell counts the bytes it has delivered and, after a reattach,
 * skips `delivered - output_offset` replayed bytes. Output printed while disconnected
 * that no longer fits the agent's scrollback (1 MiB by default) is gone; nothing is
 * ever repeated.
 */
export class Shell {
  #channel: Channel | undefined;
  #id = '';
  #delivered = 0;
  #skip = 0;
  #size: { cols: number; rows: number };
  #exit: ShellExit | undefined;
  #detached = false;
  /** Frames typed while reconnecting; sent, in order, right behind the reattach `start`. */
  #queued: ShellClientFrame[] = [];
  readonly #dataListeners = new Set<(data: Buffer) => void>();
  readonly #exitListeners = new Set<(exit: ShellExit) => void>();
  readonly #errorListeners = new Set<(err: unknown) => void>();
  #done!: { resolve: (exit: ShellExit) => void; reject: (err: unknown) => void };
  /** Settles when the shell exits (or cannot be reached any more). */
  readonly exited: Promise<ShellExit>;
  /** Reattaches done after a drop; for diagnostics and tests. */
  reconnects = 0;

  private constructor(
    private readonly ctx: ShellContext,
    size: { cols: number; rows: number },
  ) {
    this.#size = size;
    this.exited = new Promise((resolve, reject) => (this.#done = { resolve, reject }));
    this.exited.catch(() => undefined);
  }

  /** Opens a new shell. */
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
    return this.#delivered;
  }

  /** The underlying socket, e.g. for a test that cuts the connection. */
  get socket(): Channel['socket'] | undefined {
    return this.#channel?.socket;
  }

  onData(listener: (data: Buffer) => void): () => void {
    this.#dataListeners.add(listener);
    return () => this.#dataListeners.delete(listener);
  }

  onExit(listener: (exit: ShellExit) => void): () => void {
    this.#exitListeners.add(listener);
    return () => this.#exitListeners.delete(listener);
  }

  /** A connection that cannot be restored (rejected token, shell gone). */
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

  /** Leaves the shell running in the sandbox (reattach later by `id`) and closes this connection. */
  detach(): void {
    this.#detached = true;
    this.#channel?.close();
  }

  #send(frame: ShellClientFrame): void {
    if (this.#channel?.open === true) this.#channel.send(frame);
    else this.#queued.push(frame);
  }

  #reattachFrame(): ShellStartFrame {
    return { type: 'start', ...this.#size, shell_session_id: this.#id, output: 'binary' };
  }

  async #connect(start: ShellStartFrame): Promise<void> {
    const url = socketUrl(this.ctx, 'v1/shell/ws');
    let closed!: (code: number, error: SbxClientError | undefined) => void;
    const channel = await openChannel(
      url,
      this.ctx.tokens,
      {
        onFrame: (frame) => this.#onFrame(frame),
        onBinary: (data) => this.#onOutput(data),
        onClose: (code, error) => closed(code, error),
      },
      this.ctx.timeoutMs,
    );
    closed = (code, error) => this.#onClosed(channel, code, error);
    this.#channel = channel;
    // What was delivered before is replayed first; skip it (see the class comment).
    this.#skip = this.#delivered;
    channel.send(start);
    const queued = this.#queued;
    this.#queued = [];
    for (const frame of queued) channel.send(frame);
  }

  #onFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case 'ready':
        if (frame.shell_session_id !== undefined) this.#id = frame.shell_session_id;
        // The agent says where its replay starts: skip exactly what was already delivered.
        if (frame.output_offset !== undefined)
          this.#skip = Math.max(0, this.#delivered - frame.output_offset);
        return;
      case 'stdout':
      case 'stderr':
        this.#onOutput(Buffer.from(frame.data, frame.encoding === 'base64' ? 'base64' : 'utf8'));
        return;
      case 'exit':
        this.#exit = { code: frame.code, signal: frame.signal };
        return;
      case 'error':
      case 'event':
      case 'auth_ok':
      case 'pong':
        return;
    }
  }

  #onOutput(data: Buffer): void {
    let fresh = data;
    if (this.#skip > 0) {
      const dropped = Math.min(this.#skip, data.length);
      this.#skip -= dropped;
      fresh = data.subarray(dropped);
    }
    if (fresh.length === 0) return;
    this.#delivered += fresh.length;
    for (const listener of this.#dataListeners) listener(fresh);
  }

  #onClosed(channel: Channel, code: number, error: SbxClientError | undefined): void {
    if (channel !== this.#channel) return;
    this.#channel = undefined;
    if (this.#exit !== undefined) {
      for (const listener of this.#exitListeners) listener(this.#exit);
      this.#done.resolve(this.#exit);
      return;
    }
    if (this.#detached) return;
    if (!isReconnectable(code)) {
      this.#fail(error);
      return;
    }
    this.#reconnect().catch((err: unknown) => this.#fail(err));
  }

  /** Refreshes the token when it expired, then reattaches with backoff until the policy gives up. */
  async #reconnect(): Promise<void> {
    await reconnectWithBackoff(() => this.#connect(this.#reattachFrame()), this.ctx.retry);
    this.reconnects++;
  }

  #fail(error: unknown): void {
    if (error === undefined) return;
    for (const listener of this.#errorListeners) listener(error);
    this.#done.reject(error);
  }
}
