// Redis coordination behind a circuit breaker (docs/operations.md, "Without Redis"). While
// Redis answers, every call goes to it. From the first call that finds it unreachable (its
// connection is down, or a command timed out) the breaker opens and calls stop waiting on
// it: each would cost a command timeout (2 s) and a request could make several. Until a
// background probe finds Redis again:
//  - counters (rate limits, failed-authentication limits) count in this process;
//  - published messages reach this process's subscribers at once, and are published to
//    Redis when it is back (the latest MAX_QUEUED), for the other instances;
//  - locks, values and presence fail at once with BACKEND_UNAVAILABLE: their callers
//    already go on without them (sandbox locks: database guards) or skip a round
//    (reaper, reconciler). Nothing shared is guessed from this process's memory: an
//    in-process lock or presence key would tell two instances contradicting things.
import type { Logger } from '@sbx/service-kit';
import { SbxError } from '@sbx/protocol';
import { CircuitBreaker, type BreakerState } from './circuit-breaker.js';
import type {
  Coordination,
  CounterWindow,
  GapHandler,
  Lock,
  MessageHandler,
  Unsubscribe,
} from './coordination.js';
import { InProcessCoordination } from './in-process-coordination.js';

/** Coordination whose connection state can be read without a round trip (RedisCoordination). */
export interface ReachableCoordination extends Coordination {
  /** False while the connection is down: a command would only wait for its timeout. */
  connected(): boolean;
  ping(): Promise<void>;
}

/** Messages published while Redis was away and kept for it, at most. */
export const MAX_QUEUED = 1000;

export interface ResilientCoordinationOptions {
  readonly probeIntervalMs?: number;
  readonly logger?: Pick<Logger, 'warn' | 'info'>;
  /** Clock of the in-process counters (tests). */
  readonly now?: () => number;
}

function unreachable(err: unknown): boolean {
  return err instanceof SbxError && err.code === 'BACKEND_UNAVAILABLE';
}

export class ResilientCoordination implements Coordination {
  readonly kind: Coordination['kind'];
  readonly sharedAcrossInstances: boolean;
  readonly warning: string | undefined;
  readonly keyPrefix: string;
  readonly #local: InProcessCoordination;
  readonly #breaker: CircuitBreaker;
  readonly #queued: { readonly channel: string; readonly message: string }[] = [];
  #dropped = 0;
  #closed = false;

  constructor(
    private readonly primary: ReachableCoordination,
    private readonly options: ResilientCoordinationOptions = {},
  ) {
    this.kind = primary.kind;
    this.sharedAcrossInstances = primary.sharedAcrossInstances;
    this.warning = primary.warning;
    this.keyPrefix = primary.keyPrefix;
    this.#local = new InProcessCoordination({ keyPrefix: primary.keyPrefix, now: options.now });
    this.#breaker = new CircuitBreaker({
      probeIntervalMs: options.probeIntervalMs,
      probe: async () => {
        if (!primary.connected()) throw new SbxError('BACKEND_UNAVAILABLE', 'not reconnected yet');
        await primary.ping();
      },
      onChange: (state, cause) => this.#changed(state, cause),
    });
  }

  /** True while the breaker is open: the broker runs on its in-process fallbacks. */
  get degraded(): boolean {
    return this.#breaker.isOpen;
  }

  async incr(key: string, ttlMs: number, by?: number): Promise<CounterWindow> {
    if (this.#shortCircuited()) return this.#local.incr(key, ttlMs, by);
    try {
      return await this.primary.incr(key, ttlMs, by);
    } catch (err) {
      if (!this.#failed(err)) throw err;
      return this.#local.incr(key, ttlMs, by);
    }
  }

  async acquireLock(key: string, ttlMs: number): Promise<Lock | null> {
    const lock = await this.#remote('acquireLock', () => this.primary.acquireLock(key, ttlMs));
    if (lock === null) return null;
    return {
      token: lock.token,
      extend: (extendMs) => this.#remote('extendLock', () => lock.extend(extendMs)),
      release: () => this.#remote('releaseLock', () => lock.release()),
    };
  }

  set(key: string, value: string, ttlMs: number): Promise<void> {
    return this.#remote('set', () => this.primary.set(key, value, ttlMs));
  }

  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    return this.#remote('setIfAbsent', () => this.primary.setIfAbsent(key, value, ttlMs));
  }

  get(key: string): Promise<string | null> {
    return this.#remote('get', () => this.primary.get(key));
  }

  del(key: string): Promise<boolean> {
    return this.#remote('del', () => this.primary.del(key));
  }

  async publish(channel: string, message: string): Promise<void> {
    if (!this.#shortCircuited()) {
      try {
        return await this.primary.publish(channel, message);
      } catch (err) {
        if (!this.#failed(err)) throw err;
      }
    }
    // This process hears it now; the others once Redis is back.
    await this.#local.publish(channel, message);
    this.#queued.push({ channel, message });
    if (this.#queued.length > MAX_QUEUED) {
      this.#queued.shift();
      this.#dropped += 1;
    }
  }

  /** Through Redis, and locally for what this process publishes while Redis is away. */
  async subscribe(channel: string, handler: MessageHandler, onGap?: GapHandler): Promise<Unsubscribe> {
    const remote = await this.primary.subscribe(channel, handler, onGap);
    const local = await this.#local.subscribe(channel, handler);
    return async () => {
      await local();
      await remote();
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#breaker.stop();
    await Promise.all([this.primary.close(), this.#local.close()]);
  }

  /** True when the call must not go to Redis now; opens the breaker on a lost connection. */
  #shortCircuited(): boolean {
    if (this.#closed) throw new SbxError('BACKEND_UNAVAILABLE', 'coordination is closed');
    if (this.#breaker.isOpen) return true;
    if (this.primary.connected()) return false;
    this.#breaker.trip(new SbxError('BACKEND_UNAVAILABLE', 'the connection to Redis is down'));
    return true;
  }

  /** True (and the breaker opened) when `err` says Redis cannot be reached. */
  #failed(err: unknown): boolean {
    if (!unreachable(err)) return false;
    this.#breaker.trip(err);
    return true;
  }

  async #remote<T>(operation: string, call: () => Promise<T>): Promise<T> {
    if (this.#shortCircuited()) {
      throw new SbxError('BACKEND_UNAVAILABLE', `Redis unavailable during ${operation} (circuit open)`);
    }
    try {
      return await call();
    } catch (err) {
      this.#failed(err);
      throw err;
    }
  }

  #changed(state: BreakerState, cause: unknown): void {
    const logger = this.options.logger;
    if (state === 'open') {
      logger?.warn(
        { err: cause },
        'coordination store unreachable: rate limits count per process, locks and presence are ' +
          'unavailable, notifications stay in this process until it is back',
      );
      return;
    }
    logger?.info(
      { queued_messages: this.#queued.length, dropped_messages: this.#dropped },
      'coordination store reachable again',
    );
    void this.#flush();
  }

  /** Publishes what waited for Redis, oldest first; what fails again waits for the next return. */
  async #flush(): Promise<void> {
    this.#dropped = 0;
    while (this.#queued.length > 0 && !this.#breaker.isOpen) {
      const next = this.#queued[0];
      if (next === undefined) break;
      try {
        await this.primary.publish(next.channel, next.message);
        this.#queued.shift();
      } catch (err) {
        if (!this.#failed(err)) this.#queued.shift(); // refused, not unreachable: retrying will not help
      }
    }
  }
}
