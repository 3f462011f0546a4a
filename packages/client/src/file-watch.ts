import { WS_CLOSE_CODES, type ServerFrame, type WatchEventFrame } from '@sbx/protocol';
import { AsyncQueue, deliveredByCallback } from './async-queue.js';
import { clientError, type SbxClientError } from './errors.js';
import { Reconnector } from './reconnect.js';
import { abortReason } from './retry.js';
import { StartHandshake } from './start-handshake.js';
import {
  errorOfFrame,
  isReconnectable,
  openChannel,
  socketUrl,
  type Channel,
  type SocketContext,
} from './ws-channel.js';

/** One change: `create`, `write`, `remove` or `rename` (with `old_path`), and the entry's `kind`. */
export type WatchEvent = Omit<WatchEventFrame, 'type'>;

export interface WatchOptions {
  /** Watch a directory's whole tree, not only its entries. */
  readonly recursive?: boolean;
  /** Ends the watch; iteration then throws the abort reason. */
  readonly signal?: AbortSignal;
  /** Receive events by callback; without it they queue for `for await`. */
  readonly onEvent?: (event: WatchEvent) => void;
}

/** One connection's state, so frames of a dropped socket never touch its successor. */
interface Link {
  channel: Channel | undefined;
  readonly start: StartHandshake;
  /** An `error` frame after the start: the agent gave up watching (a close follows). */
  lastError: SbxClientError | undefined;
}

/**
 * File events of a path over `WS /v1/files/watch`, as an async iterable or a callback.
 *
 * A dropped socket (or one closed for an expired token, 4401) is opened again with backoff
 * and a refreshed token, and watching starts again. The agent keeps no history: changes
 * made while disconnected are not reported (`reconnects` counts the gaps; rescan after
 * one if that matters). The watch ends when `close()` is called, the signal aborts, or
 * the watched path itself is removed (after its `remove` event); it fails, and
 * iteration throws, when a reconnect is refused or used up (backoff with jitter before
 * every attempt, at most the policy's `maxAttempts` until a connection lasts: see
 * Reconnector), when the agent gives up on a slow reader, or when watching fails on the
 * agent (an `error` frame before its close, e.g. the kernel's limit of watches reached).
 */
export class FileWatch implements AsyncIterable<WatchEvent>, AsyncDisposable {
  #link: Link | undefined;
  #finished = false;
  readonly #reconnector: Reconnector;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #queue: AsyncQueue<WatchEvent> | undefined;
  readonly #onAbort = (): void => this.#finish(abortReason(this.options.signal));
  #done!: { resolve: () => void; reject: (err: unknown) => void };
  /** Settles when the watch ends: resolves after `close()` or the path's removal, rejects on failure. */
  readonly ended: Promise<void>;
  /** Connections opened again after a drop. */
  reconnects = 0;

  private constructor(
    private readonly ctx: SocketContext,
    readonly path: string,
    private readonly options: WatchOptions,
  ) {
    this.#signal =
      options.signal === undefined ? this.#stop.signal : AbortSignal.any([options.signal, this.#stop.signal]);
    this.#reconnector = new Reconnector(ctx.retry, () => `watch ${path}`);
    this.#queue = options.onEvent === undefined ? new AsyncQueue('a watch', () => this.close()) : undefined;
    this.ended = new Promise((resolve, reject) => (this.#done = { resolve, reject }));
    this.ended.catch(() => undefined);
  }

  /** Resolves once the agent watches the path (a missing path is a NotFoundError). */
  static async open(ctx: SocketContext, path: string, options: WatchOptions = {}): Promise<FileWatch> {
    const watch = new FileWatch(ctx, path, options);
    await watch.#connect();
    options.signal?.addEventListener('abort', watch.#onAbort, { once: true });
    return watch;
  }

  /** The current socket, e.g. for a test that cuts the connection. */
  get socket(): Channel['socket'] | undefined {
    return this.#link?.channel?.socket;
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return (this.#queue ?? deliveredByCallback<WatchEvent>('watch events', 'onEvent'))[
      Symbol.asyncIterator
    ]();
  }

  /** Stops watching; iteration ends after the events already received. */
  close(): void {
    this.#finish();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
    await this.ended.catch(() => undefined);
  }

  async #connect(): Promise<void> {
    const link: Link = { channel: undefined, start: new StartHandshake(), lastError: undefined };
    const channel = await openChannel(
      socketUrl(this.ctx, 'v1/files/watch'),
      this.ctx.tokens,
      {
        onFrame: (frame) => this.#onFrame(link, frame),
        onClose: (code, err) => this.#onClosed(link, code, err),
      },
      this.ctx.timeoutMs,
      { signal: this.#signal, keepAlive: this.ctx.keepAlive },
    );
    link.channel = channel;
    channel.send({
      type: 'start',
      path: this.path,
      ...(this.options.recursive === true ? { recursive: true } : {}),
    });
    await link.start.wait(channel, this.ctx.timeoutMs, this.#signal, `watch ${this.path}`);
  }

  #onFrame(link: Link, frame: ServerFrame): void {
    switch (frame.type) {
      case 'ready':
        // In the frame's own tick (a finished watch already failed the start by its abort),
        // so a close right behind `ready` finds this link current.
        if (!link.start.pending) return;
        this.#link = link;
        link.start.succeed();
        this.#reconnector.connected();
        return;
      case 'event':
        this.#deliver({
          event: frame.event,
          path: frame.path,
          kind: frame.kind,
          ...(frame.old_path === undefined ? {} : { old_path: frame.old_path }),
        });
        return;
      case 'error': {
        const error = errorOfFrame(frame, `watch ${this.path}`);
        if (link.start.pending) link.start.fail(error);
        else link.lastError = error;
        return;
      }
      case 'auth_ok':
      case 'stdout':
      case 'stderr':
      case 'exit':
      case 'pong':
        return;
    }
  }

  #deliver(event: WatchEvent): void {
    if (this.#finished) return;
    this.#reconnector.proven();
    if (this.options.onEvent === undefined) this.#queue?.push(event);
    else this.options.onEvent(event);
  }

  #onClosed(link: Link, code: number, error: SbxClientError | undefined): void {
    if (link.start.pending) {
      link.start.fail(
        link.lastError ?? error ?? clientError('BACKEND_UNAVAILABLE', 'closed before watching'),
      );
      return;
    }
    if (link !== this.#link || this.#finished) return;
    this.#reconnector.dropped();
    // 1000: the watched path went (its `remove` came first), or, after an `error` frame, watching failed.
    if (code === WS_CLOSE_CODES.NORMAL) this.#finish(link.lastError);
    else if (!isReconnectable(code)) this.#finish(link.lastError ?? error);
    else
      this.#reconnector
        .reconnect(() => this.#connect(), this.#signal, error)
        .then(
          () => this.reconnects++,
          (err: unknown) => this.#finish(err),
        );
  }

  #finish(error?: unknown): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#stop.abort();
    this.#reconnector.dropped();
    this.options.signal?.removeEventListener('abort', this.#onAbort);
    this.#link?.channel?.close();
    if (error === undefined) {
      this.#queue?.end();
      this.#done.resolve();
    } else {
      this.#queue?.fail(error);
      this.#done.reject(error);
    }
  }
}
