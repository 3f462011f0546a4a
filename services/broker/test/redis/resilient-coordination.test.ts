// The circuit breaker in front of Redis (resilient-coordination.ts), with Redis reached
// through a TCP proxy the test cuts and restores (the machine's Redis itself is shared and
// never stopped). Once the connection is lost no call waits for a command timeout:
// counters count in this process, shared values and locks fail at once, messages reach
// this process's subscribers and wait for Redis; once it is back, the waiting messages
// reach the other instances and subscribers hear that they may have missed some.
import net from 'node:net';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { createCoordination } from '../../src/adapters/redis/create-coordination.js';
import { until } from '../support/until.js';
import {
  availableHarnesses,
  deleteKeysMatching,
  messageCollector,
  TEST_REDIS_URL,
} from './coordination-harness.js';
import { testResourceName } from '../../../../scripts/test-resource-names.mjs';

const redisRunnable = (await availableHarnesses()).some((f) => f.name === 'redis');
// A long command timeout, so that "answered in under half of it" proves nothing waited for
// it while leaving a slow, shared machine seconds of room.
const TIMEOUT_MS = 20_000;
/** Under the command timeout by far: nothing waited for it. */
const FAST_MS = TIMEOUT_MS / 2;

/** A proxy to the test Redis on a fixed port, which can be cut (listener and sockets) and restored. */
async function cuttableProxy(): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void> }> {
  const target = new URL(TEST_REDIS_URL);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(TEST_REDIS_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    async cut() {
      const closed = new Promise<void>((resolve) => {
        if (server.listening) server.close(() => resolve());
        else resolve();
      });
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    restore: () => listen(port),
  };
}

async function timed<T>(work: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
  const started = performance.now();
  try {
    const value = await work;
    return { value, ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}

(redisRunnable ? describe : describe.skip)('Redis coordination behind its circuit breaker', () => {
  const prefix = testResourceName();
  const opened: Coordination[] = [];
  const proxies: { cut(): Promise<void> }[] = [];
  const open = async (redisUrl: string) => {
    const coordination = await createCoordination({
      redisUrl,
      keyPrefix: prefix,
      redisTimeoutMs: TIMEOUT_MS,
      probeIntervalMs: 50,
    });
    opened.push(coordination);
    return coordination;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((c) => c.close()));
    await Promise.all(proxies.splice(0).map((p) => p.cut()));
  });
  afterAll(async () => {
    await deleteKeysMatching(`${prefix}*`);
  });

  it('fails fast to in-process counters and refuses shared values at once while Redis is away', async () => {
    const proxy = await cuttableProxy();
    proxies.push(proxy);
    const coordination = await open(proxy.url);
    expect((await coordination.incr('rl:a', 60_000)).count).toBe(1);
    await proxy.cut();

    const counted = await timed(coordination.incr('rl:a', 60_000));
    expect(counted.ms).toBeLessThan(FAST_MS);
    expect(counted.value?.count).toBe(1); // a window of this process's own
    expect(coordination.degraded).toBe(true);
    const refusedCalls: Array<() => Promise<unknown>> = [
      () => coordination.get('k'),
      () => coordination.set('k', 'v', 1000),
      () => coordination.acquireLock('lock', 1000),
    ];
    for (const call of refusedCalls) {
      const refused = await timed(call());
      expect(refused.ms).toBeLessThan(FAST_MS);
      expect(refused.error).toBeInstanceOf(SbxError);
      expect(refused.error).toMatchObject({ code: 'BACKEND_UNAVAILABLE', retryable: true });
    }

    await proxy.restore();
    await until(() => !coordination.degraded, 'the breaker to close');
    expect((await coordination.incr('rl:a', 60_000)).count).toBe(2); // Redis' window again
  });

  it('delivers locally at once, then to the other instances and with a gap notice once Redis is back', async () => {
    const proxy = await cuttableProxy();
    proxies.push(proxy);
    const cutOff = await open(proxy.url);
    const peer = await open(TEST_REDIS_URL);
    const local = messageCollector();
    const remote = messageCollector();
    let gaps = 0;
    await cutOff.subscribe('rotated', local.handler, () => (gaps += 1));
    await peer.subscribe('rotated', remote.handler);

    await proxy.cut();
    const published = await timed(cutOff.publish('rotated', 'sbx_1'));
    expect(published.ms).toBeLessThan(FAST_MS);
    await local.waitFor(1);
    expect(remote.messages).toEqual([]);

    await proxy.restore();
    await remote.waitFor(1);
    expect(remote.messages).toEqual(['sbx_1']);
    await until(() => gaps > 0, 'the subscriber to hear of the gap');
    // Through Redis as before.
    await cutOff.publish('rotated', 'sbx_2');
    await remote.waitFor(2);
    expect(remote.messages).toEqual(['sbx_1', 'sbx_2']);
  });
});
