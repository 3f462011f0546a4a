import type { CoordinationErrorListener, GapHandler, MessageHandler } from './coordination.js';

// One object per subscribe() call, so the same function subscribed twice is
// two subscriptions and unsubscribing one leaves the other.
interface Subscription {
  readonly handler: MessageHandler;
  readonly onGap?: GapHandler | undefined;
}

/** The local side of pub/sub: which handlers listen on which (scoped) channel. */
export class ChannelHandlers {
  private readonly byChannel = new Map<string, Set<Subscription>>();

  constructor(private readonly onError: CoordinationErrorListener) {}

  /** Returns the subscription and whether it is the channel's first one. */
  add(
    channel: string,
    handler: MessageHandler,
    onGap?: GapHandler,
  ): { subscription: Subscription; first: boolean } {
    const subscription: Subscription = { handler, onGap };
    const existing = this.byChannel.get(channel);
    if (existing) {
      existing.add(subscription);
      return { subscription, first: false };
    }
    this.byChannel.set(channel, new Set([subscription]));
    return { subscription, first: true };
  }

  /** Returns true when this removed the channel's last subscription. */
  remove(channel: string, subscription: Subscription): boolean {
    const subscriptions = this.byChannel.get(channel);
    if (!subscriptions?.delete(subscription)) return false;
    if (subscriptions.size > 0) return false;
    this.byChannel.delete(channel);
    return true;
  }

  dispatch(channel: string, message: string): void {
    const subscriptions = this.byChannel.get(channel);
    if (!subscriptions) return;
    // Live iteration: a handler unsubscribed by another mid-dispatch is skipped,
    // keeping "never called after unsubscribe".
    for (const { handler } of subscriptions) {
      try {
        handler(message);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  /** Tells every subscription that wants to know that messages may have been missed. */
  gap(): void {
    for (const subscriptions of this.byChannel.values()) {
      for (const { onGap } of subscriptions) {
        try {
          onGap?.();
        } catch (err) {
          this.onError(err);
        }
      }
    }
  }

  clear(): void {
    this.byChannel.clear();
  }
}
