import type { SbxClientError } from './errors.js';
import { StartHandshake } from './start-handshake.js';
import type { Channel } from './ws-channel.js';

export interface ShellOptions {
  readonly cols?: number;
  readonly rows?: number;
  /** Where the shell starts, a sandbox path (relative to the workspace, or absolute: `/tmp`); default the workspace. */
  readonly cwd?: string;
  readonly env?: Record<string, string>;
}

export interface ShellExit {
  readonly code: number;
  readonly signal?: string | undefined;
}

/** One connection of a shell, so frames of a dropped socket never touch its successor. */
export interface ShellLink {
  channel: Channel | undefined;
  readonly start: StartHandshake;
  /** An `error` frame after the start (e.g. input refused to an observer): why a later close happened. */
  lastError: SbxClientError | undefined;
}

export function newShellLink(): ShellLink {
  return { channel: undefined, start: new StartHandshake(), lastError: undefined };
}

/**
 * Exactly-once output across reattaches: the agent replays a shell's scrollback from its
 * oldest held byte on every attach, and its `ready` frame says at which absolute output
 * offset that replay starts. This counts the bytes delivered and, after a reattach, drops
 * `delivered - output_offset` replayed bytes.
 */
export class ReplayCounter {
  #delivered = 0;
  #skip = 0;

  get delivered(): number {
    return this.#delivered;
  }

  /** A connection's `ready`: its output starts at `outputOffset` (at 0 when the agent did not say). */
  replayFrom(outputOffset: number | undefined): void {
    this.#skip = Math.max(0, this.#delivered - (outputOffset ?? 0));
  }

  /** The part of `data` not delivered before (empty while the replay repeats known bytes). */
  fresh(data: Buffer): Buffer {
    const dropped = Math.min(this.#skip, data.length);
    this.#skip -= dropped;
    const fresh = data.subarray(dropped);
    this.#delivered += fresh.length;
    return fresh;
  }
}
