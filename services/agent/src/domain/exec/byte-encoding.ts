import { isUtf8 } from 'node:buffer';

/**
 * How process bytes travel in JSON: as UTF-8 text when they are valid UTF-8, else as
 * standard base64 of the raw bytes (the protocol's `encoding` field, frames.ts).
 */
export type DataEncoding = 'utf8' | 'base64';

export interface EncodedBytes {
  readonly data: string;
  readonly encoding: DataEncoding;
}

export function encodeBytes(bytes: Buffer): EncodedBytes {
  return isUtf8(bytes)
    ? { data: bytes.toString('utf8'), encoding: 'utf8' }
    : { data: bytes.toString('base64'), encoding: 'base64' };
}

export function decodeData(data: string, encoding: DataEncoding | undefined): Buffer {
  return Buffer.from(data, encoding === 'base64' ? 'base64' : 'utf8');
}

/** Length of a multi-byte character cut off at the end of `bytes` (0 when none is). */
export function incompleteTailLength(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back] ?? 0;
    if ((byte & 0xc0) === 0x80) continue;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? back : 0;
  }
  return 0;
}

/** Number of continuation bytes (the rest of a character cut off) at the start of `bytes`. */
function leadingContinuationLength(bytes: Uint8Array): number {
  let count = 0;
  while (count < Math.min(3, bytes.length) && ((bytes[count] ?? 0) & 0xc0) === 0x80) count++;
  return count;
}

/**
 * Bytes cut out of a longer stream (a tail, a truncated capture): a character split by
 * the cut would turn text into base64, so the split pieces at the cut edges are dropped
 * when that makes the rest valid UTF-8. Binary data stays byte-exact base64.
 */
export function encodeCutBytes(
  bytes: Buffer,
  cut: { readonly start: boolean; readonly end: boolean },
): EncodedBytes {
  if (isUtf8(bytes)) return { data: bytes.toString('utf8'), encoding: 'utf8' };
  const from = cut.start ? leadingContinuationLength(bytes) : 0;
  const to = bytes.length - (cut.end ? incompleteTailLength(bytes) : 0);
  const trimmed = bytes.subarray(from, Math.max(from, to));
  return isUtf8(trimmed) ? { data: trimmed.toString('utf8'), encoding: 'utf8' } : encodeBytes(bytes);
}

/**
 * The tail of a stream, from a cut: drops the rest of a character the cut split, unless
 * the bytes are not text anyway (then they stay byte-exact).
 */
export function trimCutStart(bytes: Buffer): Buffer {
  const skip = leadingContinuationLength(bytes);
  if (skip === 0) return bytes;
  const rest = bytes.subarray(skip);
  return isUtf8(rest.subarray(0, rest.length - incompleteTailLength(rest))) ? rest : bytes;
}

/**
 * Encodes a stream chunk by chunk. A character split across two chunks is held back
 * (at most 3 bytes) and sent with the next chunk, so text output stays `utf8` whatever
 * the pipe's chunking; a chunk that is not UTF-8 goes out whole as base64. Concatenating
 * the decoded outputs always gives back the exact bytes.
 */
export class Utf8StreamEncoder {
  #carry: Buffer | undefined;

  push(chunk: Buffer): EncodedBytes | undefined {
    const bytes = this.#carry === undefined ? chunk : Buffer.concat([this.#carry, chunk]);
    this.#carry = undefined;
    const held = incompleteTailLength(bytes);
    const body = bytes.subarray(0, bytes.length - held);
    if (!isUtf8(body)) return { data: bytes.toString('base64'), encoding: 'base64' };
    if (held > 0) this.#carry = Buffer.from(bytes.subarray(bytes.length - held));
    return body.length === 0 ? undefined : { data: body.toString('utf8'), encoding: 'utf8' };
  }

  /** The held-back bytes at end of stream: an unfinished character, so base64. */
  flush(): EncodedBytes | undefined {
    const carry = this.#carry;
    this.#carry = undefined;
    return carry === undefined ? undefined : { data: carry.toString('base64'), encoding: 'base64' };
  }
}
