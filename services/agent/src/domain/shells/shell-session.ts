import type { Pty, TerminalSize } from '../../adapters/pty.js';
import { ByteRing } from './byte-ring.js';
import { DRAIN_RELEASE, type DrainMarkerScanner } from './drain-handshake.js';
import type { ResolvedShellLimits } from './shell-limits.js';
import { firstWholeCharacter, ShellViewer, type OutputSink, type ShellExit } from './shell-viewer.js';

export interface ShellSessionHooks {
  /** The shell's process ended (it no longer counts against the limit). */
  exited(session: ShellSession, exit: ShellExit): void;
  /** Nobody can attach any more: idle grace passed, or it ended and every client left. */
  abandoned(session: ShellSession, reason: 'idle' | 'ended'): void;
  slowClientDropped(session: ShellSession): void;
}

/**
 * One PTY shared by every client attached to it. Output goes into a byte ring (the
 * scrollback) and from there to each client at its own pace; when the slowest client
 * is about to lose unsent bytes the PTY is paused, so the program blocks instead of
 * the agent buffering without bound. A client that holds everyone back for longer
 * than `slowClientTimeoutMs` is dropped; alone, a slow client is simply waited for.
 */
export class ShellSession {
  readonly #ring: ByteRing;
  readonly #viewers = new Set<ShellViewer>();
  readonly #exited: Promise<ShellExit>;
  #resolveExited: (exit: ShellExit) => void = () => {};
  #exit: ShellExit | undefined;
  #paused = false;
  #flushTimer: NodeJS.Timeout | undefined;
  #slowTimer: NodeJS.Timeout | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #killTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly id: string,
    private readonly pty: Pty,
    private readonly scanner: DrainMarkerScanner,
    private readonly limits: ResolvedShellLimits,
    private readonly hooks: ShellSessionHooks,
  ) {
    this.#ring = new ByteRing(limits.scrollbackBytes);
    this.#exited = new Promise((resolve) => (this.#resolveExited = resolve));
    pty.onData((chunk) => this.#onData(chunk));
    pty.onExit((exit) => this.#onExit(exit));
    // Until its creator attaches, and whenever nobody is attached, the grace period runs.
    this.#armIdleTimer();
  }

  get exit(): ShellExit | undefined {
    return this.#exit;
  }

  get whenExited(): Promise<ShellExit> {
    return this.#exited;
  }

  /** The absolute output offset a client attaching now receives first (the replay's start). */
  get replayOffset(): number {
    return firstWholeCharacter(this.#ring);
  }

  /** A new client: it first receives the scrollback, then live output. */
  attach(sink: OutputSink): ShellViewer {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    const viewer = new ShellViewer(sink, this.#ring);
    this.#viewers.add(viewer);
    this.#pump(viewer);
    this.#applyBackpressure();
    return viewer;
  }

  detach(viewer: ShellViewer): void {
    if (!this.#viewers.delete(viewer)) return;
    viewer.stop();
    this.#applyBackpressure();
    if (this.#viewers.size > 0) return;
    if (this.#exit === undefined) this.#armIdleTimer();
    else this.#abandon('ended');
  }

  write(data: Buffer): void {
    if (this.#exit === undefined && data.length > 0) this.pty.write(data);
  }

  resize(size: TerminalSize): void {
    if (this.#exit === undefined) this.pty.resize(size);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.#exit === undefined) this.pty.signalForeground(signal);
  }

  /**
   * Hangs the terminal up: SIGHUP to the foreground job and the session leader (an
   * interactive shell passes it on to its jobs), SIGKILL to both if the shell has not
   * ended after the grace period.
   */
  terminate(): void {
    if (this.#exit !== undefined) return;
    this.pty.signalForeground('SIGHUP');
    this.pty.kill('SIGHUP');
    this.#killTimer ??= setTimeout(() => {
      this.pty.signalForeground('SIGKILL');
      this.pty.kill('SIGKILL');
    }, this.limits.killGraceMs);
  }

  /** Stops every timer; for shutdown, after `terminate`. */
  dispose(): void {
    for (const timer of [this.#flushTimer, this.#slowTimer, this.#idleTimer, this.#killTimer])
      clearTimeout(timer);
    for (const viewer of this.#viewers) viewer.stop();
    this.#viewers.clear();
  }

  #onData(chunk: Buffer): void {
    const { output, found } = this.scanner.feed(chunk);
    if (found) this.pty.write(DRAIN_RELEASE);
    if (output.length === 0) return;
    this.#ring.append(output);
    if (this.#maxLag() >= this.limits.frameBytes) this.#flush();
    else this.#flushTimer ??= setTimeout(() => this.#flush(), this.limits.batchMs);
  }

  #onExit(processExit: ShellExit): void {
    const held = this.scanner.flush();
    if (held.length > 0) this.#ring.append(held);
    // The wrapper reports the shell's own code; its process status is that only unless it was killed.
    const reported = this.scanner.exitCode;
    const exit =
      processExit.signal === undefined && reported !== undefined ? { code: reported } : processExit;
    this.#exit = exit;
    this.#paused = false;
    clearTimeout(this.#killTimer);
    clearTimeout(this.#slowTimer);
    this.#flush();
    this.hooks.exited(this, exit);
    this.#resolveExited(exit);
  }

  #flush(): void {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    for (const viewer of this.#viewers) this.#pump(viewer);
    this.#applyBackpressure();
  }

  #pump(viewer: ShellViewer): void {
    viewer.pump(this.#ring, this.#exit, this.limits, () => this.#onWritten(viewer));
  }

  #onWritten(viewer: ShellViewer): void {
    if (!this.#viewers.has(viewer)) return;
    this.#pump(viewer);
    this.#applyBackpressure();
  }

  #maxLag(): number {
    let max = 0;
    for (const viewer of this.#viewers) max = Math.max(max, viewer.lag(this.#ring));
    return max;
  }

  #applyBackpressure(): void {
    if (this.#exit !== undefined) return;
    const lag = this.#maxLag();
    if (!this.#paused && lag > this.limits.pauseAtBytes) {
      this.#paused = true;
      this.pty.pause();
      this.#armSlowTimer();
    } else if (this.#paused && lag <= this.limits.resumeAtBytes) {
      this.#paused = false;
      clearTimeout(this.#slowTimer);
      this.#slowTimer = undefined;
      this.pty.resume();
    }
  }

  #armSlowTimer(): void {
    clearTimeout(this.#slowTimer);
    this.#slowTimer = setTimeout(() => this.#dropSlowClients(), this.limits.slowClientTimeoutMs);
    this.#slowTimer.unref();
  }

  #dropSlowClients(): void {
    this.#slowTimer = undefined;
    if (!this.#paused) return;
    const slow = [...this.#viewers].filter((viewer) => viewer.lag(this.#ring) > this.limits.resumeAtBytes);
    // Only a client that holds others back is dropped; everyone slow means wait on.
    if (slow.length < this.#viewers.size) {
      for (const viewer of slow) {
        this.detach(viewer);
        viewer.sink.drop();
        this.hooks.slowClientDropped(this);
      }
    }
    if (this.#paused) this.#armSlowTimer();
  }

  #armIdleTimer(): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#viewers.size > 0) return;
      this.terminate();
      this.#abandon(this.#exit === undefined ? 'idle' : 'ended');
    }, this.limits.idleGraceMs);
    this.#idleTimer.unref();
  }

  #abandon(reason: 'idle' | 'ended'): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    this.hooks.abandoned(this, reason);
  }
}
