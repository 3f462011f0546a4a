import type { CodeExitStatus } from '@sbx/protocol';
import type { ExitStatus } from '../exec/exit-status.js';

/** Signals that, for a snippet nobody signalled, mean the memory ran out (the OOM killer, abort()). */
const OOM_SIGNALS = new Set(['SIGKILL', 'SIGABRT', 'SIGSEGV']);

/** What an allocation failure leaves at the end of stderr, per language and C runtime. */
const ALLOCATION_FAILURES: readonly RegExp[] = [
  /\bMemoryError\b/, // Python
  /heap out of memory|Allocation failed/, // node / V8
  /\bx(?:m|re)alloc\b|cannot allocate/i, // bash; `Cannot allocate memory` (ENOMEM) anywhere
  /std::bad_alloc/, // C++
];

/** Keeps the last `limit` bytes of a stream, whatever was truncated elsewhere. */
export class TailBuffer {
  readonly #limit: number;
  #tail = Buffer.alloc(0);

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Remembers the end of `chunk` and gives it back unchanged. */
  keep(chunk: Buffer): Buffer {
    if (chunk.length >= this.#limit) this.#tail = Buffer.from(chunk.subarray(chunk.length - this.#limit));
    else if (chunk.length > 0) {
      const joined = Buffer.concat([this.#tail, chunk]);
      this.#tail = joined.subarray(Math.max(0, joined.length - this.#limit));
    }
    return chunk;
  }

  text(): string {
    return this.#tail.toString('utf8');
  }
}

/**
 * `timeout` when the timeout struck; `ok` for exit 0; `oom` when a memory signal ended the
 * program or a non-zero exit left an allocation failure at the end of stderr; else `error`.
 */
export function classifyExit(status: ExitStatus, timedOut: boolean, stderrTail: string): CodeExitStatus {
  if (timedOut) return 'timeout';
  if (status.exitCode === 0) return 'ok';
  if (status.signal !== null && OOM_SIGNALS.has(status.signal)) return 'oom';
  if (status.exitCode !== null && ALLOCATION_FAILURES.some((pattern) => pattern.test(stderrTail)))
    return 'oom';
  return 'error';
}
