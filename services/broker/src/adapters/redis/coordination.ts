import { SbxError } from '@sbx/protocol';

/**
 * The broker's narrow view of a shared key-value store: everything the domain
 * needs to coordinate broker instances (rate-limit windows, leases and reaper
 * locks, idempotency markers, cross-instance notifications) and nothing more.
 *
 * Every key and channel is scoped by the configured `keyPrefix`, so two
 * coordinators with different prefixes never see each other's data.
 * Every TTL is a positive whole number of milliseconds.
 * Every method rejects with `SbxError`: `BACKEND_UNAVAILABLE` when the store
 * cannot be reached in time (or the coordinator is closed), `INTERNAL` for a
 * misuse such as a bad TTL or `incr` on a non-counter value. A write that
 * timed out may still have been applied, which TTLs bound: a lock taken by a
 * timed-out `acquireLock` frees itself when its TTL passes.
 */
export interface Coordination {
  readonly kind: CoordinationKind;
  /** True when several broker processes using the same store see the same state. */
  readonly sharedAcrossInstances: boolean;
  /** Said once at start-up when this backend has a limitation the operator must know. */
  readonly warning: string | undefined;
  readonly keyPrefix: string;
  /**
   * True while the store cannot be reached and the broker runs on what works in this
   * process alone (resilient-coordination.ts; docs/operations.md "Without Redis").
   */
  readonly degraded: boolean;

  /**
   * Adds `by` (default 1, a positive whole number) to a counter in a fixed window: the
   * window (ttlMs) starts when the key is created and is not extended by later increments.
   */
  incr(key: string, ttlMs: number, by?: number): Promise<CounterWindow>;

  /** Takes the lock if nobody holds it; null when someone else does. */
  acquireLock(key: string, ttlMs: number): Promise<Lock | null>;

  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Stores the value only if the key holds nothing; true when this call stored it. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  get(key: string): Promise<string | null>;
  /** True when the key existed. */
  del(key: string): Promise<boolean>;

  publish(channel: string, message: string): Promise<void>;
  /**
   * Resolves once messages published afterwards will reach the handler.
   * Once the returned `Unsubscribe` has been called the handler is never called again.
   * `onGap` is told when messages may have been missed (the connection to the store was
   * lost and is back): what the handler keeps from them should be refreshed.
   */
  subscribe(channel: string, handler: MessageHandler, onGap?: GapHandler): Promise<Unsubscribe>;

  /** Drops subscriptions and connections; later calls reject. Idempotent. */
  close(): Promise<void>;
}

export type CoordinationKind = 'redis' | 'in-process';

export interface CounterWindow {
  /** The counter's value after this increment, 1 for the first call of a window. */
  readonly count: number;
  /** Milliseconds left until the window ends and the counter starts again from zero. */
  readonly ttlMs: number;
}

/** A held lock. Only its holder (the one with this token) can extend or release it. */
export interface Lock {
  readonly token: string;
  /** Sets the remaining time to ttlMs; false when the lock has expired or passed to someone else. */
  extend(ttlMs: number): Promise<boolean>;
  /** False when the lock had already expired or passed to someone else, whose hold is kept. */
  release(): Promise<boolean>;
}

/** Called, without arguments, after messages of a channel may have been lost. */
export type GapHandler = () => void;

/** A handler that throws is reported to the coordinator's `onError`; other handlers still run. */
export type MessageHandler = (message: string) => void;

/** Stops delivery to one handler. Idempotent. */
export type Unsubscribe = () => Promise<void>;

/** Told about failures nobody awaits: throwing handlers, connection drops. */
export type CoordinationErrorListener = (err: unknown) => void;

/** An increment must be a positive whole number (Redis' INCRBY takes any integer; we do not). */
export function requireIncrement(by: number): number {
  if (!Number.isSafeInteger(by) || by < 1)
    throw new SbxError('INTERNAL', `coordination increment must be a positive integer, got ${by}`);
  return by;
}

/** Rejects TTLs that Redis would refuse (PX needs a positive integer) in both implementations. */
export function requireTtlMs(ttlMs: number): number {
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) {
    throw new SbxError('INTERNAL', `coordination ttlMs must be a positive integer, got ${String(ttlMs)}`);
  }
  return ttlMs;
}
