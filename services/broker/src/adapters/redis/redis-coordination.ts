import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { SbxError } from '@sbx/protocol';
import {
  requireIncrement,
  requireTtlMs,
  type Coordination,
  type CoordinationErrorListener,
  type CounterWindow,
  type GapHandler,
  type Lock,
  type MessageHandler,
  type Unsubscribe,
} from './coordination.js';
import { KeyNamespace } from './key-namespace.js';
import { RedisChannelSubscriber } from './redis-channel-subscriber.js';
import { describeRedisUrl, toCoordinationError } from './redis-errors.js';
import { EXTEND_IF_HOLDER, INCR_IN_WINDOW, RELEASE_IF_HOLDER } from './redis-scripts.js';

const DEFAULT_TIMEOUT_MS = 2_000;
const MAX_RECONNECT_DELAY_MS = 2_000;

export interface RedisCoordinationOptions {
  /** e.g. redis://user:pass@host:6379/0 */
  readonly url: string;
  readonly keyPrefix: string;
  /** Bound on connecting and on every command, so an unreachable Redis fails a request instead of hanging it. */
  readonly timeoutMs?: number;
  readonly onError?: CoordinationErrorListener;
}

/**
 * Connects the command and subscriber connections, or fails within about
 * `timeoutMs` with BACKEND_UNAVAILABLE: no retrying at start-up, where a
 * wrong URL should be reported, not waited out. Once connected, dropped
 * connections are re-established in the background.
 */
export async function connectRedisCoordination(
  options: RedisCoordinationOptions,
): Promise<RedisCoordination> {
  const namespace = new KeyNamespace(options.keyPrefix);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const onError = options.onError ?? (() => undefined);
  const phase: { connected: boolean; lastError: unknown } = { connected: false, lastError: undefined };
  const open = (connectionName: string) => {
    const client = new Redis(options.url, {
      lazyConnect: true,
      connectionName,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      // How long a closing socket may linger (a timer that keeps the process alive).
      disconnectTimeout: timeoutMs,
      maxRetriesPerRequest: 1,
      retryStrategy: (times) => (phase.connected ? Math.min(times * 100, MAX_RECONNECT_DELAY_MS) : null),
    });
    // Without a listener ioredis prints every connection error to the console.
    client.on('error', (err: unknown) => {
      phase.lastError = err;
      if (phase.connected) onError(toCoordinationError(err, 'connection'));
    });
    return client;
  };
  const commands = open('sbx-broker');
  const subscriber = open('sbx-broker-sub');
  try {
    await withDeadline(Promise.all([commands.connect(), subscriber.connect()]), timeoutMs);
  } catch (err) {
    drop(commands);
    drop(subscriber);
    // ioredis rejects connect() with a bare "Connection is closed."; the error event says why.
    const cause = phase.lastError ?? err;
    const reason = cause instanceof Error ? cause.message : String(cause);
    const where = describeRedisUrl(options.url);
    throw new SbxError('BACKEND_UNAVAILABLE', `cannot connect to Redis at ${where}: ${reason}`, { cause });
  }
  phase.connected = true;
  return new RedisCoordination(namespace, commands, subscriber, onError);
}

/** The coordination contract over Redis, shared by every broker instance using the same Redis and prefix. */
export class RedisCoordination implements Coordination {
  readonly kind = 'redis';
  readonly sharedAcrossInstances = true;
  readonly warning = undefined;
  readonly keyPrefix: string;
  /** Always false here: resilient-coordination.ts wraps this and knows when Redis is away. */
  readonly degraded = false;
  private readonly channels: RedisChannelSubscriber;
  private closed = false;

  /** Takes over two connected clients; use `connectRedisCoordination`. */
  constructor(
    private readonly namespace: KeyNamespace,
    private readonly commands: Redis,
    private readonly subscriber: Redis,
    onError: CoordinationErrorListener,
  ) {
    this.keyPrefix = namespace.prefix;
    this.channels = new RedisChannelSubscriber(subscriber, onError);
  }

  async incr(key: string, ttlMs: number, by = 1): Promise<CounterWindow> {
    const scoped = this.scoped(key);
    requireTtlMs(ttlMs);
    requireIncrement(by);
    const reply = await this.run('incr', () => INCR_IN_WINDOW.run(this.commands, [scoped], [ttlMs, by]));
    if (!isNumberPair(reply)) {
      throw new SbxError('INTERNAL', 'unexpected reply from the Redis counter script');
    }
    return { count: reply[0], ttlMs: reply[1] };
  }

  async acquireLock(key: string, ttlMs: number): Promise<Lock | null> {
    const scoped = this.scoped(key);
    requireTtlMs(ttlMs);
    const token = randomUUID();
    const reply = await this.run('acquireLock', () => this.commands.set(scoped, token, 'PX', ttlMs, 'NX'));
    if (reply === null) return null;
    return {
      token,
      extend: async (extendMs) => {
        requireTtlMs(extendMs);
        const extended = await this.run('extendLock', () =>
          EXTEND_IF_HOLDER.run(this.commands, [scoped], [token, extendMs]),
        );
        return extended === 1;
      },
      release: async () => {
        const released = await this.run('releaseLock', () =>
          RELEASE_IF_HOLDER.run(this.commands, [scoped], [token]),
        );
        return released === 1;
      },
    };
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    const scoped = this.scoped(key);
    requireTtlMs(ttlMs);
    await this.run('set', () => this.commands.set(scoped, value, 'PX', ttlMs));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const scoped = this.scoped(key);
    requireTtlMs(ttlMs);
    const reply = await this.run('setIfAbsent', () => this.commands.set(scoped, value, 'PX', ttlMs, 'NX'));
    return reply === 'OK';
  }

  async get(key: string): Promise<string | null> {
    const scoped = this.scoped(key);
    return this.run('get', () => this.commands.get(scoped));
  }

  async del(key: string): Promise<boolean> {
    const scoped = this.scoped(key);
    return (await this.run('del', () => this.commands.del(scoped))) > 0;
  }

  async publish(channel: string, message: string): Promise<void> {
    const scoped = this.scoped(channel);
    await this.run('publish', () => this.commands.publish(scoped, message));
  }

  async subscribe(channel: string, handler: MessageHandler, onGap?: GapHandler): Promise<Unsubscribe> {
    return this.channels.subscribe(this.scoped(channel), handler, onGap);
  }

  /**
   * False while the command connection is down (ioredis reconnects in the background): a
   * command sent now would only wait in ioredis' queue until it times out.
   */
  connected(): boolean {
    return !this.closed && this.commands.status === 'ready';
  }

  /** One round trip; rejects like any command when Redis does not answer in time. */
  async ping(): Promise<void> {
    if (this.closed) throw new SbxError('BACKEND_UNAVAILABLE', 'coordination is closed');
    await this.run('ping', () => this.commands.ping());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.channels.clear();
    await Promise.all([quitOrDrop(this.commands), quitOrDrop(this.subscriber)]);
  }

  private scoped(name: string): string {
    if (this.closed) throw new SbxError('BACKEND_UNAVAILABLE', 'coordination is closed');
    return this.namespace.scoped(name);
  }

  private async run<T>(operation: string, command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (err) {
      throw toCoordinationError(err, operation);
    }
  }
}

function isNumberPair(reply: unknown): reply is [number, number] {
  return Array.isArray(reply) && reply.length === 2 && reply.every((n) => typeof n === 'number');
}

/** QUIT lets pending replies arrive; when Redis is gone it cannot, so drop the socket. */
async function quitOrDrop(client: Redis): Promise<void> {
  if (client.status !== 'ready') return drop(client);
  try {
    await client.quit();
  } catch {
    drop(client);
  }
}

// ioredis arms a disconnectTimeout timer even for a socket that already
// closed, which would hold the process open for nothing.
function drop(client: Redis): void {
  if (client.status !== 'end') client.disconnect();
}

async function withDeadline<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
