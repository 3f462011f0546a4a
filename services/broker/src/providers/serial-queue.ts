/**
 * Runs operations on the same key one after another (create, stop, destroy of one
 * sandbox never interleave) while different keys run in parallel.
 */
export class SerialQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(operation, operation);
    const tail = result.catch(() => undefined);
    this.#tails.set(key, tail);
    void tail.then(() => this.#tails.get(key) === tail && this.#tails.delete(key));
    return result;
  }

  /** Resolves once every operation queued so far has finished, whatever its outcome. */
  async settled(): Promise<void> {
    await Promise.all(this.#tails.values());
  }
}
