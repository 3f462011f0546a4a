import type { Redis } from 'ioredis';
import { ChannelHandlers } from './channel-handlers.js';
import type { CoordinationErrorListener, GapHandler, MessageHandler, Unsubscribe } from './coordination.js';
import { toCoordinationError } from './redis-errors.js';

/**
 * Pub/sub over a connection of its own (a subscribed connection is reserved
 * for subscription traffic). One SUBSCRIBE per channel however many local
 * handlers; UNSUBSCRIBE when the last one leaves. Commands on one connection
 * are applied in order, so a subscribe racing an unsubscribe ends subscribed.
 */
export class RedisChannelSubscriber {
  private readonly handlers: ChannelHandlers;
  // The SUBSCRIBE in flight or done per channel: later handlers wait for it too.
  private readonly subscribed = new Map<string, Promise<unknown>>();

  constructor(
    private readonly connection: Redis,
    private readonly onError: CoordinationErrorListener,
  ) {
    this.handlers = new ChannelHandlers(onError);
    connection.on('message', (channel: string, message: string) => this.handlers.dispatch(channel, message));
    // Handed over connected: every later 'ready' is a reconnection, and whatever was
    // published in between never arrived.
    connection.on('ready', () => void this.#resubscribed());
  }

  /**
   * ioredis subscribes the channels again after 'ready'; ours is a second SUBSCRIBE of the
   * same channels (a no-op to Redis) whose reply, on the same connection, comes after its.
   * Only then are the handlers told of the gap: a message missed between the two would
   * otherwise stay missed.
   */
  async #resubscribed(): Promise<void> {
    const channels = [...this.subscribed.keys()];
    try {
      if (channels.length > 0) await this.connection.subscribe(...channels);
    } catch (err) {
      this.onError(toCoordinationError(err, 'subscribe'));
    }
    this.handlers.gap();
  }

  async subscribe(channel: string, handler: MessageHandler, onGap?: GapHandler): Promise<Unsubscribe> {
    const { subscription, first } = this.handlers.add(channel, handler, onGap);
    if (first) this.subscribed.set(channel, this.connection.subscribe(channel));
    try {
      await this.subscribed.get(channel);
    } catch (err) {
      // Not awaited: Redis is likely down and the caller should hear so now.
      void this.leave(channel, this.handlers.remove(channel, subscription));
      throw toCoordinationError(err, 'subscribe');
    }
    return async () => this.leave(channel, this.handlers.remove(channel, subscription));
  }

  /** Forgets local handlers; the connection itself is closed by its owner. */
  clear(): void {
    this.handlers.clear();
    this.subscribed.clear();
  }

  private async leave(channel: string, wasLast: boolean): Promise<void> {
    if (!wasLast) return;
    this.subscribed.delete(channel);
    try {
      await this.connection.unsubscribe(channel);
    } catch (err) {
      // Delivery already stopped locally; a failed UNSUBSCRIBE only leaves
      // messages arriving for no handler, so it is reported, not thrown.
      this.onError(toCoordinationError(err, 'unsubscribe'));
    }
  }
}
