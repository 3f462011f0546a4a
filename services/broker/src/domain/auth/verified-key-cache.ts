// A short-lived memory of API keys that verified, so a burst of requests with
// one key costs one database lookup. Entries are keyed by the SHA-256 of the
// key, so the cache never holds a usable credential. Only successes are kept:
// a wrong key always reaches the store (concurrent requests with one key share a lookup).
import { createHash } from 'node:crypto';
import type { Clock } from '@sbx/tokens';

interface Entry<T> {
  readonly value: T;
  readonly expiresAt: number;
}

export class VerifiedKeyCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  /** Lookups under way: a burst of requests with one new key costs one lookup, not one each. */
  private readonly loading = new Map<string, Promise<T>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly clock: Clock,
  ) {}

  get(key: string): T | undefined {
    return this.#remembered(digestOf(key));
  }

  #remembered(digest: string): T | undefined {
    const entry = this.entries.get(digest);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.clock()) {
      this.entries.delete(digest);
      return undefined;
    }
    return entry.value;
  }

  /** The remembered value, else `load`'s (remembered when it resolves), shared by concurrent callers. */
  async getOrLoad(key: string, load: () => Promise<T>): Promise<T> {
    const digest = digestOf(key); // once per call: the key is hashed for the lookup and the entry alike
    const cached = this.#remembered(digest);
    if (cached !== undefined) return cached;
    const pending = this.loading.get(digest);
    if (pending !== undefined) return pending;
    const loaded = load().finally(() => this.loading.delete(digest));
    this.loading.set(digest, loaded);
    const value = await loaded;
    this.#remember(digest, value);
    return value;
  }

  set(key: string, value: T): void {
    this.#remember(digestOf(key), value);
  }

  #remember(digest: string, value: T): void {
    if (this.ttlMs <= 0) return;
    this.entries.delete(digest);
    // Map keeps insertion order: the first entry is the oldest.
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
    this.entries.set(digest, { value, expiresAt: this.clock() + this.ttlMs });
  }
}

function digestOf(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('base64url');
}
