/** Buffers kept for reuse: enough for the frames a socket holds in flight at its high-water mark. */
const MAX_KEPT = 4;

/**
 * Reusable buffers for output frames. A frame must be a copy (it views the shell's ring,
 * which moves on before the socket flushes), but a fresh buffer per frame costs an
 * allocation, page faults and garbage collection for every 256 KiB of bulk output;
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
      this.#size = data.length;
    }
    const buffer = this.#kept.pop() ?? Buffer.allocUnsafeSlow(this.#size);
    data.copy(buffer);
    return { frame: buffer.subarray(0, data.length), written: () => this.#keep(buffer) };
  }

  #keep(buffer: Buffer): void {
    if (buffer.length === this.#size && this.#kept.length < MAX_KEPT) this.#kept.push(buffer);
  }
}
