/**
 * Items pushed by socket callbacks, read by one `for await` loop. Everything pushed is
 * kept until it is read (a producer with nobody reading grows it: subscribe by callback
 * instead). `end()` finishes the loop once the items are read; `fail(err)` makes the
 * loop throw `err` after them. Leaving the loop early (`break`) drops what is queued,
 * ignores later pushes and calls `onReturn` (e.g. to close the socket).
 */
export class AsyncQueue<T extends object> implements AsyncIterable<T> {
  #items: T[] = [];
  #ended = false;
  #error: { readonly reason: unknown } | undefined;
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (err: unknown) => void } | undefined;
  #iterated = false;

  constructor(
    private readonly what: string,
    private readonly onReturn?: () => void,
  ) {}

  push(item: T): void {
    if (this.#ended) return;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    if (waiter === undefined) this.#items.push(item);
    else waiter.resolve({ value: item, done: false });
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#wake();
  }

  fail(reason: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = { reason };
    this.#wake();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.#iterated) throw new TypeError(`${this.what} can be iterated once`);
    this.#iterated = true;
    return {
      next: () => this.#next(),
      return: () => {
        this.#items = [];
        this.#ended = true;
        this.onReturn?.();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  #next(): Promise<IteratorResult<T>> {
    const item = this.#items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.#error !== undefined) return Promise.reject(this.#error.reason);
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    if (waiter === undefined) return;
    if (this.#error === undefined) waiter.resolve({ value: undefined, done: true });
    else waiter.reject(this.#error.reason);
  }
}

/** The iterable of a stream whose items go to a callback instead: iterating it is a mistake. */
export function deliveredByCallback<T>(what: string, callback: string): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      throw new TypeError(`${what} go to the ${callback} callback given; they cannot be iterated too`);
    },
  };
}
