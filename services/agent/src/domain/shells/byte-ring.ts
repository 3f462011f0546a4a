/**
 * A fixed-size ring of the most recent output bytes, addressed by absolute offsets
 * (bytes ever written), so each reader keeps its own cursor and learns when the
 * bytes it has not read yet were overwritten. Appending copies into one buffer
 * allocated up front: the memory a shell's scrollback costs never grows.
 */
export class ByteRing {
  readonly #buffer: Buffer;
  #end = 0;

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    this.#buffer = Buffer.alloc(capacity);
  }

  /** Absolute offset of the oldest byte still held. */
  get start(): number {
    return Math.max(0, this.#end - this.capacity);
  }

  /** Absolute offset just past the newest byte: the total number of bytes ever appended. */
  get end(): number {
    return this.#end;
  }

  append(chunk: Uint8Array): void {
    // Only the last `capacity` bytes of an oversized chunk can survive.
    const kept = chunk.length > this.capacity ? chunk.subarray(chunk.length - this.capacity) : chunk;
    const skipped = chunk.length - kept.length;
    const at = (this.#end + skipped) % this.capacity;
    const first = Math.min(kept.length, this.capacity - at);
    this.#buffer.set(kept.subarray(0, first), at);
    if (first < kept.length) this.#buffer.set(kept.subarray(first), 0);
    this.#end += chunk.length;
  }

  /**
   * Up to `max` bytes from absolute offset `from` (raised to `start` if older).
   * Contiguous bytes come back as a view that the next `append` may overwrite:
   * consume the result before appending again.
   */
  read(from: number, max: number): Buffer {
    const begin = Math.max(from, this.start);
    const length = Math.max(0, Math.min(max, this.#end - begin));
    const at = begin % this.capacity;
    if (at + length <= this.capacity) return this.#buffer.subarray(at, at + length);
    const first = this.capacity - at;
    return Buffer.concat([this.#buffer.subarray(at), this.#buffer.subarray(0, length - first)], length);
  }
}
