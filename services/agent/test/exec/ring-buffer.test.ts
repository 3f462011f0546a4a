import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ByteRingBuffer } from '../../src/domain/processes/ring-buffer.js';

/** What a ring buffer must hold after `writes`: the newest `capacity` bytes of their concatenation. */
function expectedTail(writes: Buffer[], capacity: number): Buffer {
  const all = Buffer.concat(writes);
  return all.subarray(Math.max(0, all.length - capacity));
}

describe('ByteRingBuffer', () => {
  it('keeps everything while under capacity, growing from a small start', () => {
    const ring = new ByteRingBuffer(1000, 8);
    const writes = [Buffer.from('hello '), Buffer.from('ring '), Buffer.from('buffer')];
    for (const chunk of writes) ring.write(chunk);
    expect(ring.tail().toString()).toBe('hello ring buffer');
    expect(ring.size).toBe(17);
    expect(ring.droppedBytes).toBe(0);
    expect(ring.tail(6).toString()).toBe('buffer');
  });

  it('keeps the newest bytes exactly and counts the dropped ones, across many wraps', () => {
    const capacity = 1009;
    const ring = new ByteRingBuffer(capacity, 16);
    const writes: Buffer[] = [];
    for (let i = 0; i < 500; i++) {
      const chunk = randomBytes(1 + ((i * 37) % 300));
      writes.push(chunk);
      ring.write(chunk);
      expect(ring.tail().equals(expectedTail(writes, capacity))).toBe(true);
    }
    const total = writes.reduce((sum, chunk) => sum + chunk.length, 0);
    expect(ring.totalBytes).toBe(total);
    expect(ring.size).toBe(capacity);
    expect(ring.droppedBytes).toBe(total - capacity);
  });

  it('takes a chunk larger than its capacity by keeping its end', () => {
    const ring = new ByteRingBuffer(10);
    ring.write(Buffer.from('abc'));
    ring.write(Buffer.from('0123456789XYZ'));
    expect(ring.tail().toString()).toBe('3456789XYZ');
    expect(ring.droppedBytes).toBe(6);
    ring.write(Buffer.from('!'));
    expect(ring.tail().toString()).toBe('456789XYZ!');
  });

  it('reads from an absolute offset, starting at the oldest byte once that offset was overwritten', () => {
    const ring = new ByteRingBuffer(8);
    ring.write(Buffer.from('abcdef'));
    expect(ring.readFrom(2)).toEqual({ offset: 2, data: Buffer.from('cdef') });
    ring.write(Buffer.from('ghijkl'));
    expect(ring.startOffset).toBe(4);
    expect(ring.readFrom(1)).toEqual({ offset: 4, data: Buffer.from('efghijkl') });
    expect(ring.readFrom(10)).toEqual({ offset: 10, data: Buffer.from('kl') });
    expect(ring.readFrom(99)).toEqual({ offset: 12, data: Buffer.alloc(0) });
  });

  it('returns copies, so later writes do not change what a reader got', () => {
    const ring = new ByteRingBuffer(4);
    ring.write(Buffer.from('abcd'));
    const snapshot = ring.tail();
    ring.write(Buffer.from('wxyz'));
    expect(snapshot.toString()).toBe('abcd');
  });

  it('refuses a capacity that is not a positive whole number', () => {
    expect(() => new ByteRingBuffer(0)).toThrow(RangeError);
    expect(() => new ByteRingBuffer(1.5)).toThrow(RangeError);
  });
});
