/** Bytes a UTF-8 sequence needs, judged from its first byte (1 for anything that cannot start one). */
function sequenceLength(lead: number): number {
  if (lead >= 0xf0 && lead < 0xf8) return 4;
  if (lead >= 0xe0) return lead < 0xf0 ? 3 : 1;
  if (lead >= 0xc0) return 2;
  return 1;
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/**
 * The length of `bytes` without a multi-byte character cut off at its end, so a
 * frame never ends inside a character; the held-back bytes start the next frame.
 */
export function completeUtf8Length(bytes: Uint8Array): number {
  const lookback = Math.min(3, bytes.length);
  for (let back = 1; back <= lookback; back++) {
    const byte = bytes[bytes.length - back] ?? 0;
    if (isContinuation(byte)) continue;
    return sequenceLength(byte) > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}

/**
 * How many continuation bytes (at most 3) open `bytes`: the tail of a character
 * whose first bytes were overwritten, worthless to a reader starting here.
 */
export function orphanContinuationLength(bytes: Uint8Array): number {
  let count = 0;
  while (count < 3 && count < bytes.length && isContinuation(bytes[count] ?? 0)) count++;
  return count;
}
