import {
  BEARER_WORD,
  findSecrets,
  isBlank,
  isTokenChar,
  markerOf,
  type SecretMatch,
} from './secret-patterns.js';

/** Names the redactor's rules in every answer; bump it when what is redacted changes. */
export const REDACTOR_VERSION = 'sbx-redactor/1';

/** A stream filter: bytes in, the same bytes with secrets replaced out (possibly later). */
export interface Redactor {
  write(chunk: Buffer): Buffer;
  /** Everything still held back, redacted: the stream is over (a later write carries on after it). */
  end(): Buffer;
  /** Secrets replaced so far. */
  readonly replacements: number;
}

export interface RedactorOptions {
  /** Bytes of one unfinished run of token characters held back at most (default 64 KiB). */
  readonly maxHeldBytes?: number;
}

const KIB = 1024;
const EMPTY = Buffer.alloc(0);

/**
 * Where the text stops being safe to redact now: the trailing run of token characters
 * (it may be a secret that continues in the next chunk) and a `Bearer` plus blanks
 * before it stay. `heldLength` characters at the start were held already and are a
 * suffix of that shape, so a chunk of token characters only extends what is held.
 */
function holdStart(text: string, heldLength: number): number {
  let start = text.length;
  while (start > heldLength && isTokenChar(text.charCodeAt(start - 1))) start -= 1;
  if (start === heldLength) return 0;
  let blanks = start;
  while (blanks > 0 && isBlank(text.charCodeAt(blanks - 1))) blanks -= 1;
  if (blanks === start || blanks < BEARER_WORD.length) return start;
  if (text.slice(blanks - BEARER_WORD.length, blanks).toLowerCase() !== BEARER_WORD) return start;
  let word = blanks - BEARER_WORD.length;
  while (word > 0 && isTokenChar(text.charCodeAt(word - 1))) word -= 1;
  return word;
}

/**
 * A streaming redactor (docs/code-runner.md#redactor). Bytes are handled as latin1 text,
 * one character per byte, so output is byte-identical to input wherever nothing matches
 * (binary data, UTF-8 split anywhere). A secret split across chunks at any byte is found
 * because secrets are runs of token characters and an unfinished run is held back; a
 * run longer than `maxHeldBytes` is flushed through redaction, keeping its last 8 KiB
 * (never cutting a match) in view of what follows.
 */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  const maxHeld = Math.max(2, options.maxHeldBytes ?? 64 * KIB);
  const keptOnOverflow = Math.min(8 * KIB, Math.floor(maxHeld / 2));
  /** Held-back text, and the one character before it in the stream (for the look-behind). */
  let held = '';
  let context = '';
  let replacements = 0;

  /** `text[from, to)` with every match inside it replaced by its marker. */
  const redact = (text: string, from: number, to: number, matches: readonly SecretMatch[]): string => {
    let out = '';
    let at = from;
    for (const match of matches) {
      if (match.start < from || match.end > to) continue;
      out += text.slice(at, match.start + match.keep) + markerOf(match.kind);
      at = match.end;
      replacements += 1;
    }
    return out + text.slice(at, to);
  };

  /** Emits `context + held` up to `cut` (clamped so that no match is split) and keeps the rest. */
  const flushTo = (wanted: (full: string) => number): string => {
    const full = context + held;
    const from = context.length;
    const matches = findSecrets(full, from);
    let cut = wanted(full);
    const split = matches.find((match) => match.start < cut && match.end >= cut && cut < full.length);
    if (split !== undefined) cut = split.start > from ? split.start : full.length;
    const out = redact(full, from, cut, matches);
    if (cut > from) context = full.slice(cut - 1, cut);
    held = full.slice(cut);
    return out;
  };

  return {
    write(chunk: Buffer): Buffer {
      if (chunk.length === 0) return EMPTY;
      const text = held + chunk.toString('latin1');
      const start = holdStart(text, held.length);
      let out = '';
      if (start > 0) {
        const full = context + text.slice(0, start);
        out = redact(full, context.length, full.length, findSecrets(full, context.length));
        context = text.slice(start - 1, start);
      }
      held = text.slice(start);
      if (held.length > maxHeld) out += flushTo((full) => full.length - keptOnOverflow);
      return out === '' ? EMPTY : Buffer.from(out, 'latin1');
    },
    end(): Buffer {
      const out = flushTo((full) => full.length);
      return out === '' ? EMPTY : Buffer.from(out, 'latin1');
    },
    get replacements(): number {
      return replacements;
    },
  };
}
