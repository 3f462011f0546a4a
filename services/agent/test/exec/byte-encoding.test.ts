import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import {
  encodeBytes,
  encodeCutBytes,
  trimCutStart,
  Utf8StreamEncoder,
  type EncodedBytes,
} from '../../src/domain/exec/byte-encoding.js';

function decodeAll(parts: Array<EncodedBytes | undefined>): Buffer {
  return Buffer.concat(
    parts.flatMap((part) => (part === undefined ? [] : [Buffer.from(part.data, part.encoding)])),
  );
}

/** Feeds `bytes` to an encoder in chunks cut at `cuts`, and returns what it emitted. */
function streamInChunks(bytes: Buffer, cuts: number[]): Array<EncodedBytes | undefined> {
  const encoder = new Utf8StreamEncoder();
  const out: Array<EncodedBytes | undefined> = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(encoder.push(bytes.subarray(from, cut)));
    from = cut;
  }
  out.push(encoder.flush());
  return out;
}

describe('byte encoding of process output', () => {
  it('sends text as utf8 and anything else as base64, byte-exact', () => {
    expect(encodeBytes(Buffer.from('héllo ✓'))).toEqual({ data: 'héllo ✓', encoding: 'utf8' });
    const binary = Buffer.from([0xff, 0x00, 0xfe, 0x41]);
    expect(encodeBytes(binary)).toEqual({ data: binary.toString('base64'), encoding: 'base64' });
  });

  it('keeps text utf8 when chunks split multi-byte characters', () => {
    const text = Buffer.from('a€b😀c');
    for (let cut = 1; cut < text.length; cut++) {
      const parts = streamInChunks(text, [cut]);
      expect(parts.every((part) => part === undefined || part.encoding === 'utf8')).toBe(true);
      expect(decodeAll(parts).equals(text)).toBe(true);
    }
    // one byte at a time: every character is reassembled
    const byByte = streamInChunks(
      text,
      Array.from({ length: text.length - 1 }, (_, i) => i + 1),
    );
    expect(
      byByte
        .filter((part) => part !== undefined)
        .map((part) => part.data)
        .join(''),
    ).toBe('a€b😀c');
  });

  it('round-trips arbitrary bytes in arbitrary chunks', () => {
    for (let round = 0; round < 50; round++) {
      const bytes = randomBytes(1 + ((round * 97) % 2000));
      const cuts = [...new Set([3, 17, 250, 251, 999].filter((cut) => cut < bytes.length))];
      expect(decodeAll(streamInChunks(bytes, cuts)).equals(bytes)).toBe(true);
    }
  });

  it('sends an unfinished character at end of stream as base64 rather than losing it', () => {
    const parts = streamInChunks(Buffer.from([0x61, 0xe2, 0x82]), []);
    expect(parts[0]).toEqual({ data: 'a', encoding: 'utf8' });
    expect(parts[1]).toEqual({ data: Buffer.from([0xe2, 0x82]).toString('base64'), encoding: 'base64' });
  });

  it('drops a character split by a cut when the rest is text, and never alters binary', () => {
    const text = Buffer.from('€uro€');
    expect(encodeCutBytes(text.subarray(1, text.length - 1), { start: true, end: true })).toEqual({
      data: 'uro',
      encoding: 'utf8',
    });
    const binary = Buffer.from([0x80, 0xff, 0x00]);
    expect(encodeCutBytes(binary, { start: true, end: true })).toEqual({
      data: binary.toString('base64'),
      encoding: 'base64',
    });
    expect(trimCutStart(text.subarray(2)).toString()).toBe('uro€');
    expect(trimCutStart(binary).equals(binary)).toBe(true);
  });
});
