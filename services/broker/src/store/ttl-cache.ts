// A small per-process cache for rows that change rarely and are read on every
// request (tenant and client policies). Writes through the same process drop the
// entry at once; another broker instance sees a change within `ttlMs`.

interface Entry<V> {
  readonly value: V;
  readonly expiresAt: number;
}

export class TtlCache<V> {
  readonly #entries = new Map<string, Entry<V>>();
  /** Bumped by every delete: a load that started before a write must not store what it read. */
  #generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10_000,
  ) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    if (this.ttlMs <= 0) return load();
    const hit = this.#entries.get(key);
    if (hit !== undefined && hit.expiresAt > this.now()) return hit.value;
    const generation = this.#generation;
    const value = await load();
    if (generation !== this.#generation) return value;
    // Bounded: a flood of distinct keys evicts the oldest entry (Map keeps insertion order).
    if (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, expiresAt: this.now() + this.ttlMs });
    return value;
  }

  delete(key: string): void {
    this.#generation += 1;
    this.#entries.delete(key);
  }
}
