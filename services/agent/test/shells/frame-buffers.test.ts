import { describe, expect, it } from '@jest/globals';
import { FrameBuffers } from '../../src/http/shells/frame-buffers.js';

describe('output frame buffers', () => {
  it('keeps a frame intact until the socket has written it, however many follow', () => {
    const buffers = new FrameBuffers();
    const first = buffers.copy(Buffer.alloc(1000, 'a'));
    const fills = ['b', 'c', 'd', 'e', 'f'];
    const later = fills.map((char) => buffers.copy(Buffer.alloc(1000, char)));
    expect(first.frame.equals(Buffer.alloc(1000, 'a'))).toBe(true);
    later.forEach((copy, index) => expect(copy.frame.toString()).toBe(fills[index]!.repeat(1000)));
  });

  it('reuses a written frame, so bulk output does not allocate per frame', () => {
    const buffers = new FrameBuffers();
    const first = buffers.copy(Buffer.alloc(4096, 'a'));
    first.written();
    const second = buffers.copy(Buffer.alloc(4096, 'b'));
    expect(second.frame.buffer).toBe(first.frame.buffer);
    expect(second.frame.toString()).toBe('b'.repeat(4096));
  });

  it('frames a copy of exactly the bytes given, smaller or larger than before', () => {
    const buffers = new FrameBuffers();
    buffers.copy(Buffer.alloc(100, 'x')).written();
    const small = buffers.copy(Buffer.from('hi'));
    expect(small.frame.toString()).toBe('hi');
    small.written();
    const large = buffers.copy(Buffer.alloc(300, 'y'));
    expect(large.frame.toString()).toBe('y'.repeat(300));
  });

  it('reuses buffers for frames whose sizes differ by a few bytes (JSON text with escapes)', () => {
    const buffers = new FrameBuffers();
    const first = buffers.copy(Buffer.alloc(65_600, 'a'));
    first.written();
    const second = buffers.copy(Buffer.alloc(65_700, 'b'));
    expect(second.frame.buffer).toBe(first.frame.buffer);
    expect(second.frame.toString()).toBe('b'.repeat(65_700));
  });
});
