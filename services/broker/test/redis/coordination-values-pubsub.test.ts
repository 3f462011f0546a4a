import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createCoordination } from '../../src/adapters/redis/create-coordination.js';
import {
  availableHarnesses,
  messageCollector,
  TEST_REDIS_URL,
  type CoordinationHarness,
} from './coordination-harness.js';

const SHORT_TTL_MS = 300;
const PAST_SHORT_TTL_MS = 450;
const LONG_TTL_MS = 60_000;

const harnesses = await availableHarnesses();

describe.each(harnesses)('$name coordination: values, pub/sub, isolation', (factory) => {
  let h: CoordinationHarness;
  beforeAll(() => {
    h = factory.create();
  });
  afterAll(async () => {
    await h.dispose();
  });

  describe('values with a TTL', () => {
    it('reads back a value until its TTL passes', async () => {
      const c = await h.open();
      await c.set('marker', 'v1', SHORT_TTL_MS);
      expect(await c.get('marker')).toBe('v1');
      await h.advance(PAST_SHORT_TTL_MS);
      expect(await c.get('marker')).toBeNull();
      expect(await c.get('never-set')).toBeNull();
    });

    it('set overwrites the value and restarts its TTL', async () => {
      const c = await h.open();
      await c.set('marker', 'v1', SHORT_TTL_MS);
      await c.set('marker', 'v2', LONG_TTL_MS);
      await h.advance(PAST_SHORT_TTL_MS);
      expect(await c.get('marker')).toBe('v2');
    });

    it('setIfAbsent has exactly one winner among concurrent callers, until expiry', async () => {
      const a = await h.open();
      const b = await h.openPeer(a);
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 === 0 ? a : b).setIfAbsent('idem', `caller-${i}`, SHORT_TTL_MS),
        ),
      );
      const winners = results.flatMap((won, i) => (won ? [i] : []));
      expect(winners).toHaveLength(1);
      expect(await b.get('idem')).toBe(`caller-${winners[0]}`);

      await h.advance(PAST_SHORT_TTL_MS);
      expect(await a.setIfAbsent('idem', 'after-expiry', LONG_TTL_MS)).toBe(true);
      expect(await b.get('idem')).toBe('after-expiry');
    });

    it('del removes a value and says whether there was one', async () => {
      const c = await h.open();
      await c.set('gone', 'x', LONG_TTL_MS);
      expect(await c.del('gone')).toBe(true);
      expect(await c.get('gone')).toBeNull();
      expect(await c.del('gone')).toBe(false);
      expect(await c.setIfAbsent('gone', 'y', LONG_TTL_MS)).toBe(true);
    });
  });

  describe('publish/subscribe', () => {
    it('delivers to subscribers (on another instance where shared) and stops after unsubscribe', async () => {
      const subscriberSide = await h.open();
      const publisherSide = await h.openPeer(subscriberSide);
      const leaving = messageCollector();
      const staying = messageCollector();
      const unsubscribe = await subscriberSide.subscribe('sandbox-events', leaving.handler);
      await subscriberSide.subscribe('sandbox-events', staying.handler);

      await publisherSide.publish('sandbox-events', 'first');
      await leaving.waitFor(1);
      await staying.waitFor(1);

      await unsubscribe();
      await unsubscribe();
      await publisherSide.publish('sandbox-events', 'second');
      await staying.waitFor(2);
      expect(staying.messages).toEqual(['first', 'second']);
      expect(leaving.messages).toEqual(['first']);
    });

    it('keeps channels apart and survives a throwing handler', async () => {
      const c = await h.open();
      const reportedBefore = h.reported.length;
      const other = messageCollector();
      const wanted = messageCollector();
      await c.subscribe('other-channel', other.handler);
      await c.subscribe('wanted', () => {
        throw new Error('handler bug');
      });
      await c.subscribe('wanted', wanted.handler);

      await c.publish('wanted', 'hello');
      await wanted.waitFor(1);
      expect(other.messages).toEqual([]);
      expect(h.reported.slice(reportedBefore)).toEqual([expect.objectContaining({ message: 'handler bug' })]);
    });
  });

  describe('key prefixes', () => {
    it('two prefixes never see each other’s values, counters, locks or messages', async () => {
      const a = await h.open();
      const b = await h.open();
      expect(a.keyPrefix).not.toBe(b.keyPrefix);

      await a.set('shared-name', 'from-a', LONG_TTL_MS);
      expect(await b.get('shared-name')).toBeNull();
      expect(await b.setIfAbsent('shared-name', 'from-b', LONG_TTL_MS)).toBe(true);
      expect(await a.get('shared-name')).toBe('from-a');
      expect(await b.del('shared-name')).toBe(true);
      expect(await a.get('shared-name')).toBe('from-a');

      await a.incr('hits', LONG_TTL_MS);
      expect((await b.incr('hits', LONG_TTL_MS)).count).toBe(1);
      expect(await a.acquireLock('job', LONG_TTL_MS)).not.toBeNull();
      expect(await b.acquireLock('job', LONG_TTL_MS)).not.toBeNull();

      const onA = messageCollector();
      await a.subscribe('events', onA.handler);
      await b.publish('events', 'from-b');
      await a.publish('events', 'from-a');
      await onA.waitFor(1);
      expect(onA.messages).toEqual(['from-a']);
    });

    it('rejects a prefix that could collide with another (":" inside, empty)', async () => {
      const redisUrl = h.name === 'redis' ? TEST_REDIS_URL : undefined;
      await expect(createCoordination({ keyPrefix: 'a:b', redisUrl })).rejects.toMatchObject({
        code: 'INTERNAL',
      });
      await expect(createCoordination({ keyPrefix: '', redisUrl })).rejects.toMatchObject({
        code: 'INTERNAL',
      });
    });
  });

  describe('instances', () => {
    it('shares state with a separate instance on the same prefix exactly when it says so', async () => {
      const a = await h.open();
      const separate = await h.openSeparate(a);
      await a.set('visible', 'yes', LONG_TTL_MS);
      expect(await separate.get('visible')).toBe(a.sharedAcrossInstances ? 'yes' : null);
      expect(a.kind).toBe(factory.name);
      expect(a.sharedAcrossInstances).toBe(factory.name === 'redis');
      expect(a.warning?.includes('single broker instance') ?? false).toBe(!a.sharedAcrossInstances);
    });

    it('rejects calls after close with BACKEND_UNAVAILABLE, and close is idempotent', async () => {
      const c = await h.open();
      await c.set('k', 'v', LONG_TTL_MS);
      await c.close();
      await c.close();
      await expect(c.get('k')).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
      await expect(c.subscribe('ch', () => undefined)).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    });
  });
});
