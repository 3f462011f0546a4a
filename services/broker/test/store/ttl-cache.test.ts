import { describe, expect, it } from '@jest/globals';
import { TtlCache } from '../../src/store/ttl-cache.js';

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('TtlCache (policy reads)', () => {
  it('reuses a value until it expires, then loads again', async () => {
    let now = 0;
    let loads = 0;
    const cache = new TtlCache<string>(5_000, () => now);
    const load = () => Promise.resolve(`v${++loads}`);
    expect(await cache.get('t', load)).toBe('v1');
    now = 4_999;
    expect(await cache.get('t', load)).toBe('v1');
    now = 5_000;
    expect(await cache.get('t', load)).toBe('v2');
  });

  it('never keeps a value read before a write that dropped the entry', async () => {
    const cache = new TtlCache<string>(60_000);
    const slow = deferred<string>();
    const racing = cache.get('t', () => slow.promise); // a read of the old row, still in flight
    cache.delete('t'); // the write lands meanwhile
    slow.resolve('old');
    expect(await racing).toBe('old'); // that caller gets what it read …
    expect(await cache.get('t', () => Promise.resolve('new'))).toBe('new'); // … but it is not cached
  });

  it('stays bounded: the oldest entry goes when a new key arrives at the limit', async () => {
    let loads = 0;
    const cache = new TtlCache<number>(60_000, Date.now, 2);
    const load = () => Promise.resolve(++loads);
    await cache.get('a', load);
    await cache.get('b', load);
    await cache.get('c', load); // evicts a
    expect(await cache.get('b', load)).toBe(2);
    expect(await cache.get('a', load)).toBe(4);
  });
});
