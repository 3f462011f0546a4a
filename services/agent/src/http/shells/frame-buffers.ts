/**
 * Written buffers kept for reuse, in bytes: enough for the frames a socket holds in flight at
 * the default high-water mark (1 MiB, shell-limits.ts) plus the one that crosses it, whether
 * those are 256 KiB binary frames or 120 KiB JSON ones.
 */
const MAX_KEPT_BYTES = 1280 * 1024;
/** Buffer sizes are multiples of this: JSON frames vary by a few bytes (escapes) yet share buffers. */
const SIZE_STEP = 16 * 1024;

/**
 * Reusable buffers for output frames. A frame must be a copy (it views the shell's ring,
 * which moves on before the socket flushes), but a fresh buffer per frame costs an
 * allocation, page faults and garbage collection for every frame of bulk output;
 * a buffer returns here once the socket has written it.
 */
export class FrameBuffers {
  readonly #kept: Buffer[] = [];
  #size = 0;

  /** A copy of `data` and the call that gives its buffer back once it has been written. */
  copy(data: Buffer): { readonly frame: Buffer; readonly written: () => void } {
    if (data.length > this.#size) {
      // Frames only grow to the shell's frame limit; smaller kept buffers are dropped.
      this.#kept.length = 0;
      this.#size = Math.ceil(data.length / SIZE_STEP) * SIZE_STEP;
    }
    const buffer = this.#kept.pop() ?? Buffer.allocUnsafeSlow(this.#size);
    data.copy(buffer);
    return { frame: buffer.subarray(0, data.length), written: () => this.#keep(buffer) };
  }

  #keep(buffer: Buffer): void {
    if (buffer.length === this.#size && (this.#kept.length + 1) * this.#size <= MAX_KEPT_BYTES)
      this.#kept.push(buffer);
  }
}
