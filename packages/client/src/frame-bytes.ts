import { MAX_FRAME_BYTES, type FrameEncoding, type StdinFrame } from '@sbx/protocol';

/**
 * Bytes in JSON frames (packages/protocol/src/frames.ts): `data` is UTF-8 text, or
 * standard base64 of the raw bytes when `encoding` is `base64`.
 */
export function bytesOf(frame: { readonly data: string; readonly encoding?: FrameEncoding }): Buffer {
  return Buffer.from(frame.data, frame.encoding === 'base64' ? 'base64' : 'utf8');
}

/** Room for the frame around `data`: `{"type":"stdin","data":"","encoding":"base64","eof":true}`. */
const FRAME_OVERHEAD_BYTES = 1024;

/**
 * Raw bytes per base64 stdin frame: base64 makes 4 characters of 3 bytes and needs no JSON
 * escaping, so the frame stays under the agent's MAX_FRAME_BYTES (a larger one closes the
 * socket with 1009).
 */
const STDIN_CHUNK_BYTES = Math.floor((MAX_FRAME_BYTES - FRAME_OVERHEAD_BYTES) / 4) * 3;

/**
 * Whether `text` fits one frame as JSON text. JSON escaping can make it 6 times longer
 * (`"` is `\"`, a control character `\u0001`), so the encoded length decides, not the text's;
 * it is measured only when the worst case would not fit.
 */
function fitsOneTextFrame(text: string): boolean {
  const limit = MAX_FRAME_BYTES - FRAME_OVERHEAD_BYTES;
  if (text.length * 6 + 2 <= limit) return true;
  return text.length <= limit && Buffer.byteLength(JSON.stringify(text), 'utf8') <= limit;
}

/**
 * The stdin frames that carry `data`: text as UTF-8 when it fits one frame, anything else
 * as base64 chunks (exact bytes; a text chunk cut inside a character would not be valid
 * UTF-8). `eof` goes on the last frame (an empty one when no data).
 */
export function stdinFrames(data: string | Uint8Array, eof = false): StdinFrame[] {
  const frames: StdinFrame[] = [];
  if (typeof data === 'string' && data !== '' && fitsOneTextFrame(data)) {
    frames.push({ type: 'stdin', data });
  } else {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
    for (let at = 0; at < bytes.length; at += STDIN_CHUNK_BYTES) {
      const chunk = bytes.subarray(at, at + STDIN_CHUNK_BYTES);
      frames.push({ type: 'stdin', data: chunk.toString('base64'), encoding: 'base64' });
    }
  }
  if (eof) {
    const last = frames.at(-1);
    if (last === undefined) frames.push({ type: 'stdin', data: '', eof: true });
    else frames[frames.length - 1] = { ...last, eof: true };
  }
  return frames;
}
