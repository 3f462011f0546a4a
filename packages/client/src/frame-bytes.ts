import { MAX_FRAME_BYTES, type FrameEncoding, type StdinFrame } from '@sbx/protocol';

/**
 * Bytes in JSON frames (packages/protocol/src/frames.ts): `data` is UTF-8 text, or
 * standard base64 of the raw bytes when `encoding` is `base64`.
 */
export function bytesOf(frame: { readonly data: string; readonly encoding?: FrameEncoding }): Buffer {
  return Buffer.from(frame.data, frame.encoding === 'base64' ? 'base64' : 'utf8');
}

/**
 * Raw bytes per stdin frame: base64 makes 4 characters of 3 bytes, and the frame must stay
 * under the agent's MAX_FRAME_BYTES (a larger one closes the socket with 1009).
 */
const STDIN_CHUNK_BYTES = Math.floor((MAX_FRAME_BYTES - 1024) / 4) * 3;

/**
 * The stdin frames that carry `data`: text as UTF-8, bytes as base64 so they arrive exactly,
 * split to fit the frame limit. `eof` goes on the last frame (an empty one when no data).
 */
export function stdinFrames(data: string | Uint8Array, eof = false): StdinFrame[] {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
  const asText = typeof data === 'string';
  const frames: StdinFrame[] = [];
  for (let at = 0; at < bytes.length; at += STDIN_CHUNK_BYTES) {
    const chunk = bytes.subarray(at, at + STDIN_CHUNK_BYTES);
    // A text chunk cut inside a character is no longer valid UTF-8: only whole text goes as utf8.
    frames.push(
      asText && bytes.length <= STDIN_CHUNK_BYTES
        ? { type: 'stdin', data: data }
        : { type: 'stdin', data: chunk.toString('base64'), encoding: 'base64' },
    );
  }
  if (eof) {
    const last = frames.at(-1);
    if (last === undefined) frames.push({ type: 'stdin', data: '', eof: true });
    else frames[frames.length - 1] = { ...last, eof: true };
  }
  return frames;
}
