import { randomUUID } from 'node:crypto';
import { SbxError } from '@sbx/protocol';
import { ChannelHandlers } from './channel-handlers.js';
import {
  requireIncrement,
  requireTtlMs,
  type Coordination,
  type CoordinationErrorListener,
  type CounterWindow,
  type Lock,
  type MessageHandler,
  type Unsubscribe,
} from './coordination.js';
import { KeyNamespace } from './key-namespace.js';

export const IN_PROCESS_COORDINATION_WARNING =
  'coordination is in-process: rate limits, locks and notifications are NOT shared between broker ' +
  'instances; run a single broker instance or configure Redis';

// Expired entries nobody reads again are dropped by a sweep at most this often.
const SWEEP_INTERVAL_MS = 30_000;

export interface InProcessCoordinationOptions {
  readonly keyPrefix: string;
  /** Milliseconds since the epoch; tests inject a clock they move by hand. */
  readonly now?: () => number;
  readonly onError?: CoordinationErrorListener;
}

interface Entry {
  readonly value: string;
  readonly expiresAt: number;
}

/**
 * The coordination contract in this process's memory, for a SINGLE broker
 * instance only: a second broker process has its own state, so limits, locks
 * and messages would silently not be shared. Expiry is evaluated lazily
 * against the clock, so no timer keeps the process alive.
 */
export class InProcessCoordination implements Coordination {
  readonly kind = 'in-process';
  readonly sharedAcrossInstances = false;
  readonly warning = IN_PROCESS_COORDINATION_WARNING;
  readonly keyPrefix: string;
  readonly degraded = false;

  private readonly namespace: KeyNamespace;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private readonly handlers: ChannelHandlers;
  private lastSweepAt: number;
  private closed = false;

  constructor(options: InProcessCoordinationOptions) {
    this.namespace = new KeyNamespace(options.keyPrefix);
    this.keyPrefix = this.namespace.prefix;
    this.now = options.now ?? Date.now;
    this.handlers = new ChannelHandlers(options.onError ?? (() => undefined));
    this.lastSweepAt = this.now();
  }

  async incr(key: string, ttlMs: number, by = 1): Promise<CounterWindow> {
    const scoped = this.open(key);
    requireTtlMs(ttlMs);
    requireIncrement(by);
    const current = this.read(scoped);
    if (current && !/^-?\d+$/.test(current.value)) {
      throw new SbxError('INTERNAL', 'coordination incr on a value that is not a counter');
    }
    const count = (current ? Number(current.value) : 0) + by;
    const expiresAt = current ? current.expiresAt : this.now() + ttlMs;
    this.write(scoped, String(count), expiresAt);
    return { count, ttlMs: expiresAt - this.now() };
  }

  async acquireLock(key: string, ttlMs: number): Promise<Lock | null> {
    const scoped = this.open(key);
    requireTtlMs(ttlMs);
    if (this.read(scoped)) return null;
    const token = randomUUID();
    this.write(scoped, token, this.now() + ttlMs);
    return {
      token,
      extend: async (extendMs) => {
        requireTtlMs(extendMs);
        if (!this.heldBy(scoped, token)) return false;
        this.write(scoped, token, this.now() + extendMs);
        return true;
      },
      release: async () => this.heldBy(scoped, token) && this.entries.delete(scoped),
    };
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    const scoped = this.open(key);
    this.write(scoped, value, this.now() + requireTtlMs(ttlMs));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const scoped = this.open(key);
    requireTtlMs(ttlMs);
    if (this.read(scoped)) return false;
    this.write(scoped, value, this.now() + ttlMs);
    return true;
  }

  async get(key: string): Promise<string | null> {
    return this.read(this.open(key))?.value ?? null;
  }

  async del(key: string): Promise<boolean> {
    const scoped = this.open(key);
    return this.read(scoped) !== undefined && this.entries.delete(scoped);
  }

  async publish(channel: string, message: string): Promise<void> {
    const scoped = this.open(channel);
    // Delivered later, as over a network: the publisher never runs handler code inline.
    queueMicrotask(() => this.handlers.dispatch(scoped, message));
  }

  /** No gaps: nothing here is ever lost in transit. */
  async subscribe(channel: string, handler: MessageHandler): Promise<Unsubscribe> {
    const scoped = this.open(channel);
    const { subscription } = this.handlers.add(scoped, handler);
    return async () => {
      this.handlers.remove(scoped, subscription);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.handlers.clear();
    this.entries.clear();
  }

  private open(name: string): string {
    if (this.closed) throw new SbxError('BACKEND_UNAVAILABLE', 'coordination is closed');
    return this.namespace.scoped(name);
  }

  private read(scoped: string): Entry | undefined {
    const entry = this.entries.get(scoped);
    if (entry && entry.expiresAt <= this.now()) {
      this.entries.delete(scoped);
      return undefined;
    }
    return entry;
  }

  private heldBy(scoped: string, token: string): boolean {
    return this.read(scoped)?.value === token;
  }

  private write(scoped: string, value: string, expiresAt: number): void {
    this.entries.set(scoped, { value, expiresAt });
    this.sweepIfDue();
  }

  private sweepIfDue(): void {
    const now = this.now();
    if (now - this.lastSweepAt < SWEEP_INTERVAL_MS) return;
    this.lastSweepAt = now;
    for (const [scoped, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(scoped);
    }
  }
}
