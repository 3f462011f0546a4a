// A circuit breaker for one remote dependency (the coordination store): `closed` while it
// answers; `open` from its first failure that says it is unreachable, after which callers
// stop waiting on it (each call would otherwise wait out a timeout) and take their
// fallback at once. While open, a probe runs in the background every `probeIntervalMs`
// (never on a caller's time); its first success closes the breaker again.

export type BreakerState = 'closed' | 'open';

export interface CircuitBreakerOptions {
  /** Resolves when the dependency answers again; rejects (or throws) while it does not. */
  readonly probe: () => Promise<void>;
  /** Between two probes while open (default 500 ms). */
  readonly probeIntervalMs?: number;
  /** Told of every change of state, with the failure that opened it. */
  readonly onChange?: (state: BreakerState, cause?: unknown) => void;
}

export const DEFAULT_PROBE_INTERVAL_MS = 500;

export class CircuitBreaker {
  #state: BreakerState = 'closed';
  #timer: NodeJS.Timeout | undefined;
  #probing = false;
  #stopped = false;
  readonly #probeIntervalMs: number;

  constructor(private readonly options: CircuitBreakerOptions) {
    this.#probeIntervalMs = options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
  }

  get state(): BreakerState {
    return this.#state;
  }

  get isOpen(): boolean {
    return this.#state === 'open';
  }

  /** The dependency failed as unreachable: open (once) and start probing. */
  trip(cause?: unknown): void {
    if (this.#stopped || this.#state === 'open') return;
    this.#state = 'open';
    this.options.onChange?.('open', cause);
    this.#schedule();
  }

  /** Stops probing for good (the dependency is being closed). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (this.#stopped || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#probe();
    }, this.#probeIntervalMs);
    // A breaker waiting for Redis never keeps the process alive.
    this.#timer.unref();
  }

  async #probe(): Promise<void> {
    if (this.#stopped || this.#probing || this.#state === 'closed') return;
    this.#probing = true;
    let answered = false;
    try {
      await this.options.probe();
      answered = true;
    } catch {
      // Still unreachable: probe again later.
    } finally {
      this.#probing = false;
    }
    if (this.#stopped) return;
    if (!answered) {
      this.#schedule();
      return;
    }
    this.#state = 'closed';
    this.options.onChange?.('closed');
  }
}
