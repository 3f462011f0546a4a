import type { PtyExit } from '../../adapters/pty.js';
import type { ByteRing } from './byte-ring.js';
import { completeUtf8Length, orphanContinuationLength } from './utf8-boundary.js';

export type ShellExit = PtyExit;

/** Where one attached client's output goes (a WebSocket, as the HTTP layer adapts it). */
export interface OutputSink {
  /** Bytes handed over but not yet written to the network: the flow-control signal. */
  readonly bufferedAmount: number;
  /** The largest frame this sink wants, when smaller than the shell's frame limit. */
  readonly frameBytes?: number;
  /** `data` is a view into the scrollback, valid only during the call. */
  sendOutput(data: Buffer, onWritten: () => void): void;
  /** The last call: every byte has been sent before it. */
  sendExit(exit: ShellExit): void;
  /** Fell too far behind while others kept up; the client may reattach and replay. */
  drop(): void;
}

export interface PumpLimits {
  readonly frameBytes: number;
  readonly socketHighWaterBytes: number;
}

/** Where a client attaching now starts reading: the oldest whole character still held. */
export function firstWholeCharacter(ring: ByteRing): number {
  return ring.start + orphanContinuationLength(ring.read(ring.start, 3));
}

/**
 * One client's position in a shell's output. It reads from the shared scrollback at
 * its own cursor, so a client that cannot keep up costs no memory beyond the ring:
 * its unsent bytes simply wait there (the session pauses the PTY before they would be
 * overwritten).
 */
export class ShellViewer {
  #cursor: number;
  #finished = false;

  constructor(
    readonly sink: OutputSink,
    ring: ByteRing,
  ) {
    this.#cursor = firstWholeCharacter(ring);
  }

  /** Bytes of output this client has not been sent yet. */
  lag(ring: ByteRing): number {
    return this.#finished ? 0 : Math.max(0, ring.end - this.#cursor);
  }

  /**
   * Sends what the socket will take, in frames that never split a character; once
   * the shell has exited and everything is sent, sends the exit.
   */
  pump(ring: ByteRing, exit: ShellExit | undefined, limits: PumpLimits, onWritten: () => void): void {
    if (this.#finished) return;
    const frameBytes = Math.min(limits.frameBytes, this.sink.frameBytes ?? limits.frameBytes);
    while (this.#cursor < ring.end && this.sink.bufferedAmount < limits.socketHighWaterBytes) {
      if (this.#cursor < ring.start) this.#cursor = firstWholeCharacter(ring);
      const bytes = ring.read(this.#cursor, frameBytes);
      const last = exit !== undefined && this.#cursor + bytes.length === ring.end;
      // A character cut off at the newest byte waits for the rest of it (or for the exit).
      const length = last ? bytes.length : completeUtf8Length(bytes);
      if (length === 0) break;
      this.#cursor += length;
      this.sink.sendOutput(bytes.subarray(0, length), onWritten);
    }
    if (exit !== undefined && this.#cursor >= ring.end) {
      this.#finished = true;
      this.sink.sendExit(exit);
    }
  }

  /** Detached: nothing more is sent. */
  stop(): void {
    this.#finished = true;
  }
}
