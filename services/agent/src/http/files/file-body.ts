import type { ServerResponse } from 'node:http';
import type { FileHandle } from 'node:fs/promises';
import type { UsageCounter } from '../../domain/metrics/usage-counters.js';

/**
 * Bytes per read and socket write. Each chunk costs a read on libuv's thread pool and a
 * socket write whatever its size: 1 MiB took ~30% less CPU per download than 256 KiB here.
 */
const CHUNK_BYTES = 1024 * 1024;
/** Chunks one download has out at once: the next one is read while the last is written. */
const CHUNKS_IN_FLIGHT = 2;
/** Written chunks kept for the next chunk or download: enough for two downloads at once. */
const MAX_KEPT = 2 * CHUNKS_IN_FLIGHT;

const kept: Buffer[] = [];

function takeBuffer(): Buffer {
  return kept.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
}

function keepBuffer(buffer: Buffer): void {
  if (kept.length < MAX_KEPT) kept.push(buffer);
}

/** The chunks of one download that the socket has not written yet. */
class LentChunks {
  #lent = 0;
  #wake: (() => void) | undefined;
  readonly #wakeUp = (): void => {
    const waiting = this.#wake;
    this.#wake = undefined;
    waiting?.();
  };

  constructor(private readonly res: ServerResponse) {
    res.on('close', this.#wakeUp);
  }

  /** Resolves once another chunk may be read: fewer than CHUNKS_IN_FLIGHT out, or the response gone. */
  async free(): Promise<void> {
    while (this.#lent >= CHUNKS_IN_FLIGHT && !this.res.destroyed)
      await new Promise<void>((resolve) => (this.#wake = resolve));
  }

  /** The write callback for `buffer`: reused only once written (after a failed write the socket is gone). */
  lend(buffer: Buffer): (err?: Error | null) => void {
    this.#lent += 1;
    return (err) => {
      this.#lent -= 1;
      if (err === undefined || err === null) keepBuffer(buffer);
      this.#wakeUp();
    };
  }

  release(): void {
    this.res.off('close', this.#wakeUp);
  }
}

/**
 * Sends bytes `start`…`end` (inclusive) of `handle` as the body of `res`, through a few
 * read buffers that are reused once the socket has written them.
 *
 * A read stream allocates a fresh buffer for every chunk. Those are external memory to V8,
 * and in the agent they outlived young-generation collections, so 256 MiB of them started a
 * full (mark-compact) collection every ~30 MiB: 8–9 per download, ~100 ms, and more on an
 * agent whose heap has grown (one that has served a few hundred execs). Freed chunks also
 * went back to the system and faulted in again: 10 000–16 000 page faults per download
 * against ~500 now. Reused buffers allocate nothing per chunk. `sent` counts each chunk as
 * it goes to the socket. The file ending early ends the body there, as a read stream would.
 */
export async function sendFileBody(
  res: ServerResponse,
  handle: FileHandle,
  start: number,
  end: number,
  sent: UsageCounter,
): Promise<void> {
  const chunks = new LentChunks(res);
  try {
    for (let position = start; position <= end;) {
      await chunks.free();
      // The client went away: nothing more to send (the request log records what it got).
      if (res.destroyed) return;
      const buffer = takeBuffer();
      const length = Math.min(buffer.length, end - position + 1);
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      sent.add(bytesRead);
      res.write(buffer.subarray(0, bytesRead), chunks.lend(buffer));
    }
    res.end();
  } catch (err) {
    // Before the first byte the error handler still answers; after it, only a cut-off body can tell.
    if (!res.headersSent) throw err;
    res.destroy();
  } finally {
    chunks.release();
  }
}
