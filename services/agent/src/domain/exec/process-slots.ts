import { SbxError } from '@sbx/protocol';

/** One counter for every running user process (exec, background, WebSocket), so one limit holds for all. */
export class ProcessSlots {
  readonly limit: number;
  #inUse = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  get inUse(): number {
    return this.#inUse;
  }

  /** Takes a slot or refuses with RATE_LIMITED; call the returned function once the process is gone. */
  acquire(): () => void {
    if (this.#inUse >= this.limit)
      throw new SbxError('RATE_LIMITED', `too many running processes (limit ${this.limit})`, {
        retryAfterSeconds: 1,
        details: { limit: this.limit },
      });
    this.#inUse += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inUse -= 1;
    };
  }
}
