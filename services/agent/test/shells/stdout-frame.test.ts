import { describe, expect, it } from '@jest/globals';
import { FrameBuffers } from '../../src/http/shells/frame-buffers.js';
import { encodeStdoutFrame, STDOUT_FRAME_BYTES } from '../../src/http/shells/stdout-frame.js';

/** What a client of the JSON protocol has always received for output `bytes`. */
function stringified(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes)
    ? JSON.stringify({ type: 'stdout', data: text })
    : JSON.stringify({ type: 'stdout', data: bytes.toString('base64'), encoding: 'base64' });
}

function encoded(bytes: Buffer): string {
  const { frame, written } = encodeStdoutFrame(bytes, new FrameBuffers());
  const text = frame.toString('utf8');
  written();
  return text;
}

/** Every byte value below 0x80, shuffled into text, around 16-byte boundaries. */
function terminalText(length: number, seed: number): Buffer {
  const pieces = [
    'plain ',
    '\r\n',
    '\x1b[01;34m',
    '"quoted"',
    'back\\slash',
    '\t',
    'é',
    '€',
    '😀',
    '\x00\x07\x7f',
  ];
  let text = '';
  for (let i = 0; Buffer.byteLength(text) < length; i++) {
    text += pieces[(i * 7 + seed) % pieces.length]!;
    text += String.fromCharCode((i * 13 + seed) % 0x80);
  }
  return Buffer.from(text, 'utf8');
}

describe('stdout frames', () => {
  it('are byte for byte the JSON of the output text, whatever needs escaping', () => {
    for (let length = 0; length <= 40; length++) {
      for (const fill of ['a', '\n', '"', '\\', '\x1b', '\x00', '\x1f', ' ', '\x7f', '~']) {
        const bytes = Buffer.alloc(length, fill, 'latin1');
        expect(encoded(bytes)).toBe(stringified(bytes));
      }
    }
    for (let seed = 0; seed < 20; seed++) {
      const bytes = terminalText(1000 + seed * 37, seed);
      expect(encoded(bytes)).toBe(stringified(bytes));
    }
  });

  it('keep multi-byte characters as they are and frame the largest output a frame carries', () => {
    const lines = Buffer.from('Grüße, naïve café, €, 😀 and 中文\r\n'.repeat(4000), 'utf8');
    // Whole lines, as many as fit in one frame.
    const whole = lines.subarray(0, lines.lastIndexOf('\n', STDOUT_FRAME_BYTES - 1) + 1);
    expect(encoded(whole)).toBe(stringified(whole));
    expect(JSON.parse(encoded(whole))).toEqual({ type: 'stdout', data: whole.toString('utf8') });
    const larger = terminalText(STDOUT_FRAME_BYTES + 70_000, 3);
    expect(encoded(larger)).toBe(stringified(larger));
  });

  it('carry output that is not UTF-8 as base64', () => {
    const bytes = Buffer.from([0x41, 0xff, 0xfe, 0x00, 0x22, 0x80]);
    expect(encoded(bytes)).toBe(stringified(bytes));
    expect(JSON.parse(encoded(bytes))).toEqual({ type: 'stdout', data: 'Qf/+ACKA', encoding: 'base64' });
  });

  it('stay intact while later frames are encoded, until written', () => {
    const buffers = new FrameBuffers();
    const first = encodeStdoutFrame(Buffer.from('first "line"\n'), buffers);
    const later = ['second', 'third', 'fourth'].map((word) => encodeStdoutFrame(Buffer.from(word), buffers));
    expect(JSON.parse(first.frame.toString())).toEqual({ type: 'stdout', data: 'first "line"\n' });
    expect(later.map(({ frame }) => (JSON.parse(frame.toString()) as { data: string }).data)).toEqual([
      'second',
      'third',
      'fourth',
    ]);
  });
});
