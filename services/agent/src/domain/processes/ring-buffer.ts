/**
 * A bounded byte buffer that keeps the newest `capacity` bytes of a stream.
 *
 * Bytes are copied into one backing Buffer (no string building, no chunk lists),
 * which starts small and doubles up to `capacity`, so an idle process costs little;
 * once full, new bytes overwrite the oldest. Every byte has an absolute offset
 * (0 = the first byte ever written), which lets a reader resume where it left off
 * and tell how much it missed.
 */
export class ByteRingBuffer {
  readonly capacity: number;
  #storage: Buffer;
  /** Index in #storage where the next byte goes. */
  #head = 0;
  #size = 0;
  #total = 0;

  constructor(capacity: number, initialBytes = 4096) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0)
      throw new RangeError('capacity must be a positive whole number');
    this.capacity = capacity;
    this.#storage = Buffer.allocUnsafe(Math.min(capacity, Math.max(1, initialBytes)));
  }

  /** Bytes currently held. */
  get size(): number {
    return this.#size;
  }

  /** Bytes ever written. */
  get totalBytes(): number {
    return this.#total;
  }

  /** Bytes overwritten before anyone could read them from here. */
  get droppedBytes(): number {
    return this.#total - this.#size;
  }

  /** Absolute offset of the oldest byte still held. */
  get startOffset(): number {
    return this.#total - this.#size;
  }

  write(chunk: Uint8Array): void {
    const length = chunk.length;
    if (length === 0) return;
    this.#total += length;
    if (length >= this.capacity) {
      this.#growTo(this.capacity);
      this.#storage.set(chunk.subarray(length - this.capacity), 0);
      this.#head = 0;
      this.#size = this.capacity;
      return;
    }
    this.#reserve(length);
    const storageLength = this.#storage.length;
    const firstPart = Math.min(length, storageLength - this.#head);
    this.#storage.set(chunk.subarray(0, firstPart), this.#head);
    if (firstPart < length) this.#storage.set(chunk.subarray(firstPart), 0);
    this.#head = (this.#head + length) % storageLength;
    this.#size = Math.min(this.capacity, this.#size + length);
  }

  /** A copy of the newest `maxBytes` bytes (all held bytes by default). */
  tail(maxBytes: number = this.#size): Buffer {
    const count = Math.max(0, Math.min(Math.floor(maxBytes), this.#size));
    const out = Buffer.allocUnsafe(count);
    const storageLength = this.#storage.length;
    const start = (this.#head - count + storageLength) % storageLength;
    const firstPart = Math.min(count, storageLength - start);
    this.#storage.copy(out, 0, start, start + firstPart);
    if (firstPart < count) this.#storage.copy(out, firstPart, 0, count - firstPart);
    return out;
  }

  /**
   * The bytes from absolute `offset` to the newest. When `offset` was already
   * overwritten, reading starts at the oldest held byte; `offset` in the result says where.
   */
  readFrom(offset: number): { readonly offset: number; readonly data: Buffer } {
    const from = Math.min(this.#total, Math.max(offset, this.startOffset));
    return { offset: from, data: this.tail(this.#total - from) };
  }

  /** Makes room for `incoming` more bytes: grows while below capacity (data is contiguous until then). */
  #reserve(incoming: number): void {
    const storageLength = this.#storage.length;
    if (this.#size + incoming <= storageLength || storageLength === this.capacity) return;
    this.#growTo(Math.min(this.capacity, Math.max(storageLength * 2, this.#size + incoming)));
  }

  #growTo(length: number): void {
    if (this.#storage.length >= length) return;
    const grown = Buffer.allocUnsafe(length);
    const held = this.tail();
    held.copy(grown, 0);
    this.#storage = grown;
    this.#head = held.length % length;
  }
}
