// An unreachable or vanishing Redis must surface as BACKEND_UNAVAILABLE
// within the configured bound, never as a hang.
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { createCoordination } from '../../src/adapters/redis/create-coordination.js';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { connectRedisCoordination } from '../../src/adapters/redis/redis-coordination.js';
import { availableHarnesses, deleteKeysMatching, TEST_REDIS_URL } from './coordination-harness.js';

const keyPrefix = `sbxtest-${randomUUID().slice(0, 8)}`;
/**
 * Where failing fast is the behaviour, the timeout is set far above any answer and the
 * bound is half of it: a loaded machine has seconds of room, while a regression that
 * waits out the timeout (retrying until the connect deadline) still fails.
 */
const LONG_TIMEOUT_MS = 20_000;
const FAST_MS = LONG_TIMEOUT_MS / 2;
const redisRunnable = (await availableHarnesses()).some((f) => f.name === 'redis');

/** The SbxError `work` rejected with, and how long that took. */
async function timedRejection(work: Promise<unknown>): Promise<{ error: SbxError; elapsedMs: number }> {
  const started = Date.now();
  try {
    await work;
  } catch (error) {
    if (!(error instanceof SbxError)) throw error;
    return { error, elapsedMs: Date.now() - started };
  }
  throw new Error('expected a rejection');
}

/** A TCP server on port 0 that hands each accepted socket to `onSocket`. */
async function listen(
  onSocket: (socket: net.Socket) => void,
): Promise<{ port: number; stop: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return {
    port: address.port,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('Redis coordination when Redis is unreachable', () => {
  it('a closed port fails connect with BACKEND_UNAVAILABLE, keeping the cause', async () => {
    const { error, elapsedMs } = await timedRejection(
      createCoordination({ redisUrl: 'redis://127.0.0.1:1', keyPrefix, redisTimeoutMs: LONG_TIMEOUT_MS }),
    );
    // On the refusal itself, not at the connect deadline after retrying.
    expect(elapsedMs).toBeLessThan(FAST_MS);
    expect(error).toMatchObject({ code: 'BACKEND_UNAVAILABLE', status: 503, retryable: true });
    expect(error.message).toContain('redis://127.0.0.1:1');
    expect(error.cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('a server that accepts but never answers fails connect within the timeout', async () => {
    const silent = await listen(() => undefined);
    try {
      const { error, elapsedMs } = await timedRejection(
        connectRedisCoordination({ url: `redis://127.0.0.1:${silent.port}`, keyPrefix, timeoutMs: 500 }),
      );
      expect(error).toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
      expect(elapsedMs).toBeGreaterThanOrEqual(400);
      // The configured 500 ms deadline is what ended the wait: no hang, no other cause.
      expect(error.message).toContain('no answer within 500 ms');
    } finally {
      await silent.stop();
    }
  });

  it('keeps credentials out of the error message', async () => {
    const { error } = await timedRejection(
      createCoordination({ redisUrl: 'redis://user:s3cret-pass@127.0.0.1:1', keyPrefix }),
    );
    expect(error.message).not.toContain('s3cret-pass');
  });
});

(redisRunnable ? describe : describe.skip)('Redis coordination when Redis goes away after connecting', () => {
  afterAll(async () => {
    await deleteKeysMatching(`${keyPrefix}*`);
  });

  it('commands fail with BACKEND_UNAVAILABLE within the timeout, and close does not hang', async () => {
    const target = new URL(TEST_REDIS_URL);
    // A proxy we can cut, standing in for Redis crashing or the network dropping.
    const proxy = await listen((client) => {
      const upstream = net.connect(Number(target.port || 6379), target.hostname);
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    const reported: unknown[] = [];
    const proxiedUrl = new URL(TEST_REDIS_URL);
    proxiedUrl.port = String(proxy.port);
    proxiedUrl.hostname = '127.0.0.1';
    let coordination: Coordination | undefined;
    try {
      coordination = await connectRedisCoordination({
        url: proxiedUrl.toString(),
        keyPrefix,
        // Not LONG_TIMEOUT_MS: ioredis arms its disconnect timer (this timeout) on the dead
        // socket at close, which would hold the test process open that long.
        timeoutMs: 500,
        onError: (err) => reported.push(err),
      });
      await coordination.set('alive', 'yes', 60_000);
      expect(await coordination.get('alive')).toBe('yes');

      await proxy.stop();
      const { error } = await timedRejection(coordination.get('alive'));
      expect(error).toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
      expect(error.cause).toBeInstanceOf(Error);
      // Ended by a bound configured on the connection (one failed reconnect at most, or the
      // 500 ms command timeout), not held until Redis comes back, which it never does here.
      expect((error.cause as Error).message).toMatch(
        /max retries per request limit \(which is 1\)|Command timed out/,
      );
      expect(reported.length).toBeGreaterThan(0);
      expect(reported.every((e) => e instanceof SbxError && e.code === 'BACKEND_UNAVAILABLE')).toBe(true);

      // Close completes although Redis cannot answer a QUIT, and leaves the coordination closed.
      await coordination.close();
      await expect(coordination.get('alive')).rejects.toMatchObject({
        code: 'BACKEND_UNAVAILABLE',
        message: 'coordination is closed',
      });
    } finally {
      await coordination?.close();
      await proxy.stop();
    }
  });
});
