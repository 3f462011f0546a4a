import { describe, expect, it } from '@jest/globals';
import { ByteRing } from '../../src/domain/shells/byte-ring.js';
import { DrainMarkerScanner } from '../../src/domain/shells/drain-handshake.js';
import { completeUtf8Length, orphanContinuationLength } from '../../src/domain/shells/utf8-boundary.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('ByteRing (scrollback)', () => {
  it('reads back what was appended, from any absolute offset, in bounded pieces', () => {
    const ring = new ByteRing(8);
    ring.append(bytes('abc'));
    ring.append(bytes('def'));
    expect(ring.read(0, 100).toString()).toBe('abcdef');
    expect(ring.read(2, 3).toString()).toBe('cde');
    expect([ring.start, ring.end]).toEqual([0, 6]);
  });

  it('keeps only the newest bytes once full, across the wrap-around', () => {
    const ring = new ByteRing(8);
    ring.append(bytes('0123456'));
    ring.append(bytes('789AB'));
    expect([ring.start, ring.end]).toEqual([4, 12]);
    expect(ring.read(0, 100).toString()).toBe('456789AB');
    expect(ring.read(6, 4).toString()).toBe('6789');
  });

  it('keeps the tail of a chunk larger than the ring', () => {
    const ring = new ByteRing(4);
    ring.append(bytes('x'));
    ring.append(bytes('abcdefghij'));
    expect(ring.read(0, 10).toString()).toBe('ghij');
    expect(ring.end).toBe(11);
  });
});

describe('UTF-8 frame boundaries', () => {
  const euro = bytes('€'); // e2 82 ac

  it('holds back a character cut off at the end, and only that', () => {
    expect(completeUtf8Length(Buffer.concat([bytes('ab'), euro.subarray(0, 2)]))).toBe(2);
    expect(completeUtf8Length(Buffer.concat([bytes('ab'), euro.subarray(0, 1)]))).toBe(2);
    expect(completeUtf8Length(Buffer.concat([bytes('ab'), euro]))).toBe(5);
    expect(completeUtf8Length(bytes('plain'))).toBe(5);
    expect(completeUtf8Length(bytes('😀').subarray(0, 3))).toBe(0);
  });

  it('does not hold back bytes that cannot start a character (binary output)', () => {
    expect(completeUtf8Length(Buffer.from([0x41, 0xff]))).toBe(2);
    expect(completeUtf8Length(Buffer.from([0x80, 0x80, 0x80, 0x80]))).toBe(4);
  });

  it('finds the orphaned tail of a character whose start was overwritten', () => {
    expect(orphanContinuationLength(Buffer.concat([euro.subarray(1), bytes('x')]))).toBe(2);
    expect(orphanContinuationLength(bytes('x€'))).toBe(0);
  });
});

describe('DrainMarkerScanner', () => {
  const marker = '\x1b_sbx-drained:n0nce:42\x1b\\';

  it('removes the marker and reports the exit code it carries', () => {
    const scanner = new DrainMarkerScanner('n0nce');
    const { output, found } = scanner.feed(bytes(`last words${marker}`));
    expect(found).toBe(true);
    expect(output.toString()).toBe('last words');
    expect(scanner.exitCode).toBe(42);
  });

  it('finds a marker split across chunks without losing the bytes around it', () => {
    const stream = `out${marker}after`;
    for (let cut = 1; cut < stream.length; cut++) {
      const scanner = new DrainMarkerScanner('n0nce');
      const first = scanner.feed(bytes(stream.slice(0, cut)));
      const second = scanner.feed(bytes(stream.slice(cut)));
      expect(Buffer.concat([first.output, second.output]).toString()).toBe('outafter');
      expect(first.found || second.found).toBe(true);
    }
  });

  it('passes on output that only resembles the marker, and another nonce', () => {
    const scanner = new DrainMarkerScanner('n0nce');
    const text = `\x1b_sbx-drained:other:1\x1b\\ and \x1b[0m`;
    expect(scanner.feed(bytes(text)).output.toString()).toBe(text);
    const held = scanner.feed(bytes('tail \x1b_sbx-dr'));
    expect(held.output.toString()).toBe('tail ');
    expect(scanner.flush().toString()).toBe('\x1b_sbx-dr');
    expect(scanner.exitCode).toBeUndefined();
  });
});
