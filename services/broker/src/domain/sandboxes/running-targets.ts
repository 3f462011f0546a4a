// Where a caller's relayed commands go, remembered for a second (docs/sandboxes.md
// "Relay"): a command does not need the sandbox's row read again for every call of a
// burst. What a remembered address can be wrong about — the sandbox was stopped, deleted
// or moved by another broker within that second — shows as an agent that does not answer
// or refuses the token; the route then asks again with a fresh read (`fresh`), so the
// caller gets the answer a fresh read gives (409, 404, 423 …). This process's own stop,
// start and delete forget the sandbox at once.
import type { RunningDataplane } from './relay-resume.js';

const TTL_MS = 1_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  readonly running: RunningDataplane;
  readonly expiresAt: number;
}

export class RunningTargets {
  readonly #entries = new Map<string, Entry>();

  constructor(private readonly now: () => number) {}

  /** `who`: the caller's owner scope; the same sandbox id seen by another caller is another entry. */
  get(who: string, sandboxId: string): RunningDataplane | undefined {
    const key = `${who}\n${sandboxId}`;
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > this.now()) return entry.running;
    this.#entries.delete(key);
    return undefined;
  }

  set(who: string, running: RunningDataplane): void {
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(`${who}\n${running.sandbox.id}`, { running, expiresAt: this.now() + TTL_MS });
  }

  forget(sandboxId: string): void {
    for (const [key, entry] of this.#entries)
      if (entry.running.sandbox.id === sandboxId) this.#entries.delete(key);
  }
}
