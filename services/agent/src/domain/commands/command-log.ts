import type { CodeExitStatus, CodeLanguage, CommandRoute, ErrorCode } from '@sbx/protocol';
import { COMMAND_LOG_CODE_LINE_MAX, COMMAND_LOG_COMMAND_MAX } from '@sbx/protocol';

/** Who started a command and what it is; `command` is cut to 500 characters here. */
export interface CommandStart {
  readonly route: CommandRoute;
  /** The capability token's `sub`, its `act.sub` when present, and its `jti`. */
  readonly sub: string;
  readonly actSub?: string | undefined;
  readonly jti: string;
  readonly command: string;
  readonly language?: CodeLanguage | undefined;
}

/** How a started program ended; `exitStatus` is the code route's classification. */
export interface CommandOutcome {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly exitStatus?: CodeExitStatus | undefined;
}

/** One entry, as `page` hands it out (a snapshot: later ends do not change it). */
export interface CommandRecord {
  readonly seq: number;
  readonly route: CommandRoute;
  readonly sub: string;
  readonly actSub: string | null;
  readonly jti: string;
  readonly command: string;
  readonly language: CodeLanguage | null;
  readonly startedAt: Date;
  /** Null while the program runs. */
  readonly endedAt: Date | null;
  readonly durationMs: number | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly exitStatus: CodeExitStatus | null;
  /** The refusal's code when the program never started (a refused cwd, no free slot …). */
  readonly error: ErrorCode | null;
}

/** The entry `begin` created; the first `end` or `fail` wins, later calls do nothing. */
export interface CommandHandle {
  readonly seq: number;
  end(outcome: CommandOutcome): void;
  fail(error: ErrorCode): void;
}

export interface CommandLogOptions {
  /** Entries kept at most; the oldest is dropped first. Default 1000. */
  readonly capacity?: number;
  readonly now?: () => number;
}

export interface CommandPage {
  /** Oldest first (ascending seq). */
  readonly items: readonly CommandRecord[];
  /** The `after` of the next page; null when this page reached the newest entry. */
  readonly nextAfter: number | null;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** `cmd` as given, or argv joined by spaces; at most 500 characters. */
export function commandTextOf(request: {
  readonly argv?: readonly string[] | undefined;
  readonly cmd?: string | undefined;
}): string {
  return (request.cmd ?? (request.argv ?? []).join(' ')).slice(0, COMMAND_LOG_COMMAND_MAX);
}

/** The first line of a snippet; at most 200 characters. */
export function codeLineOf(code: string): string {
  return (code.split(/\r?\n/, 1)[0] ?? '').slice(0, COMMAND_LOG_CODE_LINE_MAX);
}

/**
 * The programs the agent started, in memory: a ring of the last `capacity` entries, each
 * numbered by a `seq` that only grows (1, 2, …). An entry is written when the program is
 * asked for (`begin`) and completed when it ends; stdin and environment never reach it.
 */
export class CommandLog {
  readonly #capacity: number;
  readonly #now: () => number;
  /** Entry `seq` sits at `(seq - 1) % capacity`; filled in order, so without holes. */
  readonly #ring: Array<Mutable<CommandRecord>> = [];
  /** The seq of the newest entry; 0 when none yet. */
  #lastSeq = 0;

  constructor(options: CommandLogOptions = {}) {
    const capacity = options.capacity ?? 1000;
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive whole number');
    this.#capacity = capacity;
    this.#now = options.now ?? Date.now;
  }

  begin(start: CommandStart): CommandHandle {
    this.#lastSeq += 1;
    const record: Mutable<CommandRecord> = {
      seq: this.#lastSeq,
      route: start.route,
      sub: start.sub,
      actSub: start.actSub ?? null,
      jti: start.jti,
      command: start.command.slice(0, COMMAND_LOG_COMMAND_MAX),
      language: start.language ?? null,
      startedAt: new Date(this.#now()),
      endedAt: null,
      durationMs: null,
      exitCode: null,
      signal: null,
      timedOut: false,
      exitStatus: null,
      error: null,
    };
    this.#ring[(record.seq - 1) % this.#capacity] = record;
    const finish = (fields: Partial<Mutable<CommandRecord>>): void => {
      if (record.endedAt !== null) return;
      const endedAt = new Date(this.#now());
      Object.assign(record, fields, {
        endedAt,
        durationMs: Math.max(0, endedAt.getTime() - record.startedAt.getTime()),
      });
    };
    return {
      seq: record.seq,
      end: (outcome) =>
        finish({
          exitCode: outcome.exitCode,
          signal: outcome.signal,
          timedOut: outcome.timedOut,
          exitStatus: outcome.exitStatus ?? null,
        }),
      fail: (error) => finish({ error }),
    };
  }

  /** Entries with a seq above `after` (all kept when absent), oldest first, at most `limit`. */
  page(query: { readonly after?: number | undefined; readonly limit: number }): CommandPage {
    const first = Math.max((query.after ?? 0) + 1, this.oldestSeq);
    const last = Math.min(first + Math.max(0, query.limit) - 1, this.#lastSeq);
    const items: CommandRecord[] = [];
    for (let seq = first; seq <= last; seq += 1) {
      const record = this.#ring[(seq - 1) % this.#capacity];
      if (record !== undefined) items.push({ ...record });
    }
    return { items, nextAfter: last < this.#lastSeq && items.length > 0 ? last : null };
  }

  /** Entries kept now (at most the capacity). */
  get size(): number {
    return this.#lastSeq - this.oldestSeq + 1;
  }

  /** The seq of the oldest entry kept (the newest + 1 when the log is empty). */
  get oldestSeq(): number {
    return Math.max(1, this.#lastSeq - this.#capacity + 1);
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }
}
