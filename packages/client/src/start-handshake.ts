import { timeoutError } from './http-errors.js';
import { abortReason } from './retry.js';
import type { Channel } from './ws-channel.js';

/**
 * The wait between sending `start` and the agent's answer to it: `ready`, an `error`
 * frame (a refused start: no such path, a bad cwd), or the socket closing. It settles
 * once; `pending` tells a frame handler whether an `error` answers the start or came later.
 */
export class StartHandshake {
  #pending = true;
  #resolve!: () => void;
  #reject!: (err: Error) => void;
  readonly #answered: Promise<void>;

  constructor() {
    this.#answered = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#answered.catch(() => undefined);
  }

  get pending(): boolean {
    return this.#pending;
  }

  succeed(): void {
    if (!this.#pending) return;
    this.#pending = false;
    this.#resolve();
  }

  fail(err: Error): void {
    if (!this.#pending) return;
    this.#pending = false;
    this.#reject(err);
  }

  /** Waits for the answer; no answer within `timeoutMs`, an abort or a refusal closes the channel. */
  async wait(
    channel: Channel,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    what: string,
  ): Promise<void> {
    const onAbort = (): void => this.fail(abortReason(signal));
    const timer = setTimeout(() => this.fail(timeoutError(what, timeoutMs)), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted === true) onAbort();
    try {
      await this.#answered;
    } catch (err) {
      channel.close();
      throw err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
