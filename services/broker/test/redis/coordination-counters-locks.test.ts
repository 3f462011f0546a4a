import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { availableHarnesses, type CoordinationHarness } from './coordination-harness.js';

// Short enough to wait out against real Redis, long enough to act within.
const SHORT_TTL_MS = 300;
const PAST_SHORT_TTL_MS = 450;
const LONG_TTL_MS = 60_000;

const harnesses = await availableHarnesses();

describe.each(harnesses)('$name coordination: counters and locks', (factory) => {
  let h: CoordinationHarness;
  beforeAll(() => {
    h = factory.create();
  });
  afterAll(async () => {
    await h.dispose();
  });

  describe('incr', () => {
    it('counts 200 concurrent increments from two instances exactly once each', async () => {
      const a = await h.open();
      const b = await h.openPeer(a);
      const windows = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).incr('requests', LONG_TTL_MS)),
      );
      const counts = windows.map((w) => w.count).toSorted((x, y) => x - y);
      expect(counts).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      expect(await a.get('requests')).toBe('200');
      for (const w of windows) {
        expect(w.ttlMs).toBeGreaterThan(LONG_TTL_MS - 5_000);
        expect(w.ttlMs).toBeLessThanOrEqual(LONG_TTL_MS);
      }
    });

    it('keeps a fixed window: later increments do not push the expiry out', async () => {
      const c = await h.open();
      const first = await c.incr('window', 1_000);
      expect(first).toEqual({ count: 1, ttlMs: expect.any(Number) });
      expect(first.ttlMs).toBeGreaterThan(800);
      await h.advance(600);
      const second = await c.incr('window', 1_000);
      expect(second.count).toBe(2);
      expect(second.ttlMs).toBeLessThanOrEqual(400);
      expect(second.ttlMs).toBeGreaterThan(0);
    });

    it('starts again from 1 once the window has passed', async () => {
      const c = await h.open();
      await c.incr('resets', SHORT_TTL_MS);
      expect((await c.incr('resets', SHORT_TTL_MS)).count).toBe(2);
      await h.advance(PAST_SHORT_TTL_MS);
      const next = await c.incr('resets', SHORT_TTL_MS);
      expect(next.count).toBe(1);
      expect(next.ttlMs).toBeGreaterThan(SHORT_TTL_MS - 100);
    });

    it('adds a batch of increments at once, in the same window', async () => {
      const c = await h.open();
      expect((await c.incr('batched', LONG_TTL_MS)).count).toBe(1);
      const batch = await c.incr('batched', LONG_TTL_MS, 41);
      expect(batch.count).toBe(42);
      expect(batch.ttlMs).toBeLessThanOrEqual(LONG_TTL_MS);
      expect(await c.get('batched')).toBe('42');
      for (const by of [0, -3, 2.5]) {
        await expect(c.incr('batched', LONG_TTL_MS, by)).rejects.toMatchObject({ code: 'INTERNAL' });
      }
      expect(await c.get('batched')).toBe('42');
    });

    it('refuses to count a value that is not a number, and bad TTLs', async () => {
      const c = await h.open();
      await c.set('text', 'hello', LONG_TTL_MS);
      await expect(c.incr('text', LONG_TTL_MS)).rejects.toMatchObject({ code: 'INTERNAL' });
      await expect(c.incr('n', 0)).rejects.toBeInstanceOf(SbxError);
      await expect(c.incr('n', 1.5)).rejects.toMatchObject({ code: 'INTERNAL' });
      expect(await c.get('n')).toBeNull();
    });
  });

  describe('locks', () => {
    it('excludes a second holder until the first releases', async () => {
      const a = await h.open();
      const b = await h.openPeer(a);
      const first = await a.acquireLock('reaper', LONG_TTL_MS);
      expect(first).not.toBeNull();
      expect(await b.acquireLock('reaper', LONG_TTL_MS)).toBeNull();
      expect(await first?.release()).toBe(true);
      const second = await b.acquireLock('reaper', LONG_TTL_MS);
      expect(second).not.toBeNull();
      expect(second?.token).not.toBe(first?.token);
      expect(await first?.release()).toBe(false);
      expect(await a.acquireLock('reaper', LONG_TTL_MS)).toBeNull();
    });

    it('gives exactly one of many concurrent contenders the lock', async () => {
      const a = await h.open();
      const b = await h.openPeer(a);
      const contenders = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).acquireLock('contended', LONG_TTL_MS)),
      );
      expect(contenders.filter((lock) => lock !== null)).toHaveLength(1);
    });

    it('expires after its ttl so a crashed holder does not block forever', async () => {
      const a = await h.open();
      const b = await h.openPeer(a);
      expect(await a.acquireLock('lease', SHORT_TTL_MS)).not.toBeNull();
      await h.advance(PAST_SHORT_TTL_MS);
      expect(await b.acquireLock('lease', LONG_TTL_MS)).not.toBeNull();
    });

    it('a stale holder cannot release or extend a lock someone else now holds', async () => {
      const a = await h.open();
      const b = await h.openPeer(a);
      const stale = await a.acquireLock('lease', SHORT_TTL_MS);
      await h.advance(PAST_SHORT_TTL_MS);
      const current = await b.acquireLock('lease', LONG_TTL_MS);
      expect(current).not.toBeNull();

      expect(await stale?.release()).toBe(false);
      expect(await stale?.extend(LONG_TTL_MS)).toBe(false);
      expect(await a.acquireLock('lease', LONG_TTL_MS)).toBeNull();
      expect(await a.get('lease')).toBe(current?.token);

      expect(await current?.release()).toBe(true);
      expect(await a.acquireLock('lease', LONG_TTL_MS)).not.toBeNull();
    });

    it('extend keeps the lock past its original ttl, for the holder only', async () => {
      const a = await h.open();
      const b = await h.openPeer(a);
      const lock = await a.acquireLock('renewed', SHORT_TTL_MS);
      expect(await lock?.extend(LONG_TTL_MS)).toBe(true);
      await h.advance(PAST_SHORT_TTL_MS);
      expect(await b.acquireLock('renewed', LONG_TTL_MS)).toBeNull();

      expect(await lock?.release()).toBe(true);
      expect(await lock?.extend(LONG_TTL_MS)).toBe(false);
      expect(await b.acquireLock('renewed', LONG_TTL_MS)).not.toBeNull();
    });

    it('extend can also shorten a lock', async () => {
      const c = await h.open();
      const lock = await c.acquireLock('shortened', LONG_TTL_MS);
      expect(await lock?.extend(SHORT_TTL_MS)).toBe(true);
      await h.advance(PAST_SHORT_TTL_MS);
      expect(await c.acquireLock('shortened', LONG_TTL_MS)).not.toBeNull();
    });
  });
});
