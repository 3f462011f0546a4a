import type { WebSocket } from 'ws';

/**
 * How a socket notices a connection that died without a close: a network partition, a NAT
 * entry or a proxy that forgot it, a laptop that slept. TCP says nothing then; without a
 * check a shell would wait forever and a streamed program's `wait()` never settle. After
 * `idleMs` without a byte from the agent the SDK sends a `ping` frame (the agent answers
 * `pong` itself, end to end, whatever relays the connection); when nothing at all has
 * arrived `timeoutMs` later, the socket is ended as dead (close 1006): a shell or a watch
 * reattaches, a streamed program fails with a BackendUnavailableError.
 */
export interface KeepAlive {
  readonly idleMs: number;
  readonly timeoutMs: number;
}

/** A dead connection is noticed within 20 s; a quiet one costs one small frame every 10 s. */
export const DEFAULT_KEEP_ALIVE: KeepAlive = Object.freeze({ idleMs: 10_000, timeoutMs: 10_000 });

/**
 * Watches one authenticated socket: `heard()` on every message, ping or pong from the agent;
 * `pause()` while the reader has stopped reading on purpose (flow control: nothing can
 * arrive then, and that is not the network's fault).
 */
export class LivenessCheck {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #paused = false;
  #stopped = false;
  #pings = 0;
  /** Set once the connection was ended for its silence. */
  dead = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly keepAlive: KeepAlive,
    private readonly onDead: () => void,
  ) {
    this.#arm();
  }

  heard(): void {
    this.#arm();
  }

  pause(): void {
    this.#paused = true;
    clearTimeout(this.#timer);
  }

  resume(): void {
    this.#paused = false;
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Silence from now on: a ping after `idleMs`, then the end after `timeoutMs` more. */
  #arm(): void {
    clearTimeout(this.#timer);
    if (this.#paused || this.#stopped) return;
    this.#timer = setTimeout(() => this.#ping(), this.keepAlive.idleMs);
    this.#timer.unref();
  }

  #ping(): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.#pings++;
    this.socket.send(JSON.stringify({ type: 'ping', id: `keep-alive-${this.#pings}` }));
    this.#timer = setTimeout(() => this.#giveUp(), this.keepAlive.timeoutMs);
    this.#timer.unref();
  }

  #giveUp(): void {
    this.dead = true;
    this.stop();
    this.onDead();
  }
}
