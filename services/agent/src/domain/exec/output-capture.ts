/**
 * Keeps the first `limit` bytes of a stream and counts all of them: a one-shot exec
 * answers with the beginning of its output and says how much there was.
 */
export class OutputCapture {
  readonly limit: number;
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #total = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  write(chunk: Buffer): void {
    this.#total += chunk.length;
    const room = this.limit - this.#kept;
    if (room <= 0) return;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.#chunks.push(kept);
    this.#kept += kept.length;
  }

  get totalBytes(): number {
    return this.#total;
  }

  get truncated(): boolean {
    return this.#total > this.#kept;
  }

  bytes(): Buffer {
    return Buffer.concat(this.#chunks, this.#kept);
  }
}
