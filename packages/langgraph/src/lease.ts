import {
  BackendUnavailableError,
  NotFoundError,
  SessionExpiredError,
  TransportError,
  UnauthenticatedError,
  type BrokerSession,
} from '@sbx/client';

/** Failures after which the sandbox may be suspended, moved or gone: ask the broker before the next use. */
export function isSandboxLoss(err: unknown): boolean {
  return (
    err instanceof TransportError ||
    err instanceof BackendUnavailableError ||
    err instanceof UnauthenticatedError ||
    err instanceof SessionExpiredError
  );
}

/**
 * Keeps a thread's session usable across long pauses (a human thinking for an hour between
 * two agent turns): the reaper idles, then suspends, a sandbox whose lease nobody extends.
 * Before a use, a heartbeat when half the idle timeout has passed since the last one, or when
 * the last use failed as if the sandbox were gone: it extends the lease, resumes a suspended
 * sandbox (the session adopts its new address), and says when the binding is no more.
 */
export class LeaseKeeper {
  #lastBeat = Date.now();
  #suspect = false;

  constructor(
    private readonly session: BrokerSession,
    private readonly staleAfterMs: number,
  ) {}

  /** The last use failed with `err`; a loss makes the next use check with the broker first. */
  noteFailure(err: unknown): void {
    if (isSandboxLoss(err)) this.#suspect = true;
  }

  /** `false` when the broker no longer knows the binding (released, expired, destroyed). */
  async beforeUse(): Promise<boolean> {
    if (!this.#suspect && Date.now() - this.#lastBeat < this.staleAfterMs) return true;
    try {
      await this.session.heartbeat();
    } catch (err) {
      if (err instanceof NotFoundError || err instanceof SessionExpiredError) return false;
      throw err;
    }
    this.#lastBeat = Date.now();
    this.#suspect = false;
    return true;
  }
}
