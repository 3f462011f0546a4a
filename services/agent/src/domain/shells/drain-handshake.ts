import { randomBytes } from 'node:crypto';

/**
 * Why this exists: when a terminal's session leader exits, Linux hangs the terminal
 * up and discards output the reader has not consumed yet (pty_flush_buffer), so
 * `printf …; exit` loses the tail of its output about one time in three — or every
 * time while a slow client has the PTY paused. The fix is to keep the session leader
 * alive until the agent has read everything: a small POSIX-sh wrapper runs the shell,
 * then prints a marker carrying a per-shell nonce and the shell's exit code, and waits
 * for one line on the terminal. Once the marker is seen, everything before it has been
 * read, so the agent strips it and answers with a newline; the wrapper then exits.
 *
 * - `set -m` makes the wrapper a process group of its own that the terminal is handed
 *   back to when the shell ends; without it a shell inside a pid namespace (bubblewrap)
 *   cannot give the terminal back, and the wrapper could not read the release. Leaving
 *   job control inside a pid namespace fails, hence the code travels in the marker and
 *   the wrapper's own exit status is only a fallback.
 * - A shell stopped at its prompt (SIGSTOP) is continued rather than abandoned.
 * - TTIN/TTOU are ignored only after the shell ends (children would inherit them), so a
 *   wrapper left in the background fails to read instead of stopping; it then exits
 *   after a pause.
 */
const WRAPPER_SCRIPT = [
  'marker=$1; shift',
  'set -m',
  '"$@"; code=$?',
  'while [ "$code" -ge 147 ] && [ "$code" -le 150 ] && jobs %1 >/dev/null 2>&1; do fg %1 >/dev/null; code=$?; done',
  "trap '' TTIN TTOU",
  'stty -echo -icanon min 1 2>/dev/null',
  'printf \'\\033_sbx-drained:%s:%s\\033\\\\\' "$marker" "$code"',
  'read -r _ || sleep 1',
  'exec 2>/dev/null',
  'exit "$code"',
].join('\n');

/** What the agent types to release a drained wrapper. */
export const DRAIN_RELEASE = Buffer.from('\n');

const EMPTY = Buffer.alloc(0);
const ESC = 0x1b;

export interface WrappedProgram {
  readonly file: string;
  readonly args: readonly string[];
}

/** `file args…` run by the drain wrapper; `sh` must exist where the program runs. */
export function wrapForDrain(program: WrappedProgram, nonce: string, sh = '/bin/sh'): WrappedProgram {
  return { file: sh, args: ['-c', WRAPPER_SCRIPT, 'sbx-shell', nonce, program.file, ...program.args] };
}

export function newDrainNonce(): string {
  return randomBytes(16).toString('hex');
}

const TERMINATOR = Buffer.from('\x1b\\');
/** Room after the marker's prefix for the exit code (at most 3 digits) and the terminator. */
const CODE_ROOM = 5;

/**
 * Finds the wrapper's marker in the output stream, removes it and keeps the exit code
 * it carries. A chunk ending in what may be the start of the marker is held back until
 * the next chunk decides.
 */
export class DrainMarkerScanner {
  readonly #prefix: Buffer;
  #held: Buffer = EMPTY;
  #found = false;
  #exitCode: number | undefined;

  constructor(nonce: string) {
    this.#prefix = Buffer.from(`\x1b_sbx-drained:${nonce}:`);
  }

  /** The shell's exit code as the wrapper reported it, once the marker has been seen. */
  get exitCode(): number | undefined {
    return this.#exitCode;
  }

  /** The output to pass on and whether this chunk completed the marker. */
  feed(chunk: Buffer): { readonly output: Buffer; readonly found: boolean } {
    if (this.#found) return { output: chunk, found: false };
    const data = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk]);
    this.#held = EMPTY;
    const at = data.indexOf(this.#prefix);
    if (at < 0) return { output: this.#holdBack(data, this.#partialPrefixAtEnd(data)), found: false };
    const codeAt = at + this.#prefix.length;
    const end = data.indexOf(TERMINATOR, codeAt);
    if (end < 0 || end - codeAt > CODE_ROOM) {
      const incomplete = end < 0 && data.length - codeAt < CODE_ROOM + TERMINATOR.length;
      return { output: this.#holdBack(data, incomplete ? data.length - at : 0), found: false };
    }
    const code = data.toString('latin1', codeAt, end);
    this.#found = true;
    this.#exitCode = /^\d{1,3}$/.test(code) ? Number(code) : undefined;
    return {
      output: Buffer.concat([data.subarray(0, at), data.subarray(end + TERMINATOR.length)]),
      found: true,
    };
  }

  /** Bytes held back as a possible marker start; called when no more output will come. */
  flush(): Buffer {
    const held = this.#held;
    this.#held = EMPTY;
    return held;
  }

  #holdBack(data: Buffer, length: number): Buffer {
    if (length > 0) this.#held = Buffer.from(data.subarray(data.length - length));
    return data.subarray(0, data.length - length);
  }

  #partialPrefixAtEnd(data: Buffer): number {
    for (let length = Math.min(this.#prefix.length - 1, data.length); length > 0; length--) {
      const from = data.length - length;
      if (data[from] === ESC && data.subarray(from).equals(this.#prefix.subarray(0, length))) return length;
    }
    return 0;
  }
}
