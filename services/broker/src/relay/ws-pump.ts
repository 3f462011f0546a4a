import { WebSocket, type RawData } from 'ws';
import type { HeldFrame } from './relay-types.js';

/** One message as one buffer, whatever the socket's `binaryType`. */
export function bufferOf(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/**
 * One direction of a relayed WebSocket: forwards messages from `source` to `dest` in order,
 * text as text and binary as binary (no decoding, no copy), and stops reading `source` while
 * `dest` holds more than `highWater` unsent bytes, so a slow reader costs the relay at most
 * about that much memory. Reading resumes when a send completes with at most half of it left:
 * the last pending send's callback always sees the smallest backlog, so it cannot stall.
 */
export class WsPump {
  bytes = 0;
  messages = 0;
  peakBuffered = 0;
  #paused = false;

  constructor(
    private readonly source: WebSocket,
    private readonly dest: WebSocket,
    private readonly highWater: number,
    private readonly onChange: (paused: boolean) => void,
  ) {}

  get paused(): boolean {
    return this.#paused;
  }

  forward(data: Buffer, isBinary: boolean): void {
    if (this.dest.readyState !== WebSocket.OPEN) return;
    this.bytes += data.length;
    this.messages += 1;
    this.dest.send(data, { binary: isBinary }, () => this.#sent());
    const buffered = this.dest.bufferedAmount;
    if (buffered > this.peakBuffered) this.peakBuffered = buffered;
    if (buffered > this.highWater && !this.#paused) {
      // `pause` stops reading the socket; messages already parsed from its last chunk still
      // arrive and are forwarded, which bounds the overshoot to one read (≤ 64 KiB + a frame).
      this.#paused = true;
      this.source.pause();
      this.onChange(true);
    }
  }

  /** Reads `source` again (its peer closed, or `dest` drained). */
  release(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.source.resume();
    this.onChange(false);
  }

  #sent(): void {
    if (this.#paused && this.dest.bufferedAmount <= this.highWater / 2) this.release();
  }
}

/**
 * For a route that checks the caller's first message asynchronously before relaying: pauses
 * `client` and keeps every message that still arrives, so none is lost before the relay's own
 * listener is attached. Pass `take()` as `pending` to `relayWebSocket`.
 */
export function holdFrames(client: WebSocket): { take(): HeldFrame[] } {
  const frames: HeldFrame[] = [];
  const keep = (data: RawData, isBinary: boolean): void => void frames.push({ data, isBinary });
  client.pause();
  client.on('message', keep);
  return {
    take() {
      client.off('message', keep);
      return frames;
    },
  };
}
