import { write } from 'node:fs';

/**
 * Keystrokes for a terminal, written in order to its master side. The descriptor is
 * non-blocking, so a terminal whose input buffer is full answers EAGAIN: the write is
 * retried on the next turn of the event loop instead of blocking it or failing.
 */
export class PtyInput {
  readonly #queue: Buffer[] = [];
  #writing = false;
  #closed = false;
  #retry: NodeJS.Immediate | undefined;

  /** `isOpen` answers whether the descriptor is still the terminal's (checked before every write). */
  constructor(
    private readonly fd: number,
    private readonly isOpen: () => boolean,
  ) {}

  write(data: Buffer): void {
    if (this.#closed || data.length === 0 || !this.isOpen()) return;
    // A copy: the caller may reuse its buffer before the write completes.
    this.#queue.push(Buffer.from(data));
    if (!this.#writing) this.#writeNext();
  }

  /** The descriptor is about to close: anything queued has nowhere to go. */
  close(): void {
    this.#closed = true;
    this.#queue.length = 0;
    clearImmediate(this.#retry);
  }

  #writeNext(): void {
    const next = this.#queue[0];
    if (this.#closed || next === undefined || !this.isOpen()) {
      this.#writing = false;
      return;
    }
    this.#writing = true;
    write(this.fd, next, 0, next.length, null, (err, written) => {
      if (err?.code === 'EAGAIN') {
        this.#retry = setImmediate(() => this.#writeNext());
        return;
      }
      // Any other error (EIO: the terminal's programs are gone) ends the input for good.
      if (err !== null) {
        this.close();
        return;
      }
      if (written < next.length) this.#queue[0] = next.subarray(written);
      else this.#queue.shift();
      this.#writeNext();
    });
  }
}
