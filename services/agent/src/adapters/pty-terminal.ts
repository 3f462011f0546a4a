import type { OnReadOpts, SocketConstructorOpts } from 'node:net';
import { ReadStream } from 'node:tty';
import type { Pty, PtyExit, TerminalSize } from './pty.js';
import { PtyInput } from './pty-input.js';
import { foregroundGroupOf, sendSignal, signalName } from './signals.js';

/** Larger than any single read from a PTY (the kernel hands over at most 4 KiB at a time). */
const READ_BUFFER_BYTES = 64 * 1024;
/** node-pty's wait for the last read after the process ended, before closing the terminal anyway. */
const CLOSE_WAIT_MS = 200;

/**
 * The master side of a PTY, read into one reused buffer: every chunk goes straight to
 * the listener (which copies what it keeps), so streaming output allocates nothing per
 * read — node-pty's UnixTerminal allocates a buffer for each. The exit is reported only
 * after the last byte was read: once the terminal's last program closed it (EIO), or
 * CLOSE_WAIT_MS after the process ended when a background job still holds it open.
 */
export class TerminalPty implements Pty {
  readonly #reader: ReadStream;
  readonly #input: PtyInput;
  #onData: (chunk: Buffer) => void = () => {};
  #onExit: (exit: PtyExit) => void = () => {};
  #processExit: PtyExit | undefined;
  #closed = false;
  #reported = false;
  /** The shells domain's flow control holds reading paused. */
  #pausedByConsumer = false;

  constructor(
    readonly pid: number,
    fd: number,
    private readonly resizeTerminal: (size: TerminalSize) => void,
  ) {
    // Node closes the descriptor the moment the reader is destroyed (EIO, or our timer), before
    // 'close' is emitted: nothing may touch it from then on, as its number may be reused.
    this.#input = new PtyInput(fd, () => this.#open);
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    // net.Socket's constructor honours `onread` for any handle; the typings list it for connect() only.
    const options: SocketConstructorOpts & { readonly onread: OnReadOpts } = {
      onread: { buffer, callback: (bytes) => this.#deliver(buffer.subarray(0, bytes)) },
    };
    this.#reader = new ReadStream(fd, options);
    // EIO is how a terminal whose programs are all gone ends; any other error ends it too.
    this.#reader.on('error', () => undefined);
    this.#reader.on('close', () => {
      this.#closed = true;
      this.#input.close();
      this.#report();
    });
  }

  get #open(): boolean {
    return !this.#reader.destroyed;
  }

  onData(listener: (chunk: Buffer) => void): void {
    this.#onData = listener;
    this.#reader.resume();
  }

  onExit(listener: (exit: PtyExit) => void): void {
    this.#onExit = listener;
  }

  write(data: Buffer): void {
    // Input for a terminal whose program has gone has nowhere to go.
    if (this.#processExit === undefined) this.#input.write(data);
  }

  resize(size: TerminalSize): void {
    if (!this.#open) return;
    try {
      this.resizeTerminal(size);
    } catch {
      // The terminal closed between the program's exit and our hearing of it: nothing to resize.
    }
  }

  signalForeground(signal: NodeJS.Signals): void {
    const group = foregroundGroupOf(this.pid);
    sendSignal(group === undefined ? this.pid : -group, signal);
  }

  kill(signal: NodeJS.Signals): void {
    sendSignal(this.pid, signal);
  }

  pause(): void {
    this.#pausedByConsumer = true;
    if (this.#open) this.#reader.pause();
  }

  resume(): void {
    this.#pausedByConsumer = false;
    if (this.#open) this.#reader.resume();
  }

  /** node-pty's waitpid result for the terminal's own process. */
  processExited(code: number, signal: number): void {
    const name = signal === 0 ? undefined : signalName(signal);
    this.#processExit = name === undefined ? { code } : { code: 128 + signal, signal: name };
    this.#input.close();
    if (this.#closed) {
      this.#report();
      return;
    }
    // What the program wrote before it ended is bounded by the kernel's buffer: read it all,
    // unless a slow client holds reading paused (its unsent bytes must not be overwritten).
    if (!this.#pausedByConsumer) this.#reader.resume();
    setTimeout(() => this.#reader.destroy(), CLOSE_WAIT_MS).unref();
  }

  /** `true`: keep reading (flow control pauses through `pause()`, not here). */
  #deliver(chunk: Buffer): boolean {
    this.#onData(chunk);
    return true;
  }

  #report(): void {
    const exit = this.#processExit;
    if (exit === undefined || !this.#closed || this.#reported) return;
    this.#reported = true;
    // The close may come in the same tick as the last read; let that data go first.
    setImmediate(() => this.#onExit(exit));
  }
}
