import { isUtf8 } from 'node:buffer';
import type { FrameBuffers } from './frame-buffers.js';

/**
 * The most output one `stdout` frame carries: as much as fits, with 8 KiB to spare for
 * escapes, in 128 KiB of JSON text, V8's limit for strings in the young generation. A client
 * that decodes and parses a larger frame gets its strings in the large-object space, fresh
 * pages every time (256 KiB frames cost a JSON client ~2.5× the CPU per byte of 64 KiB ones
 * here), while every frame also costs it a message: 120 KiB frames took it less CPU than
 * 64 KiB ones.
 */
export const STDOUT_FRAME_BYTES = 120 * 1024;

const HEAD = Buffer.from('{"type":"stdout","data":');
const TEXT_TAIL = Buffer.from('}');
const BASE64_TAIL = Buffer.from(',"encoding":"base64"}');
const QUOTE = 0x22;

/** The most bytes `length` input bytes take as a JSON string: each a `\u00XX`, and quotes. */
function jsonStringMaxBytes(length: number): number {
  return 6 * length + 2;
}

/**
 * `data` (valid UTF-8) as a JSON string into `out` at `at`, without decoding it: JSON escapes
 * only `"`, `\` and controls below 0x20, all ASCII, so `JSON.stringify` of the bytes read as
 * latin1, written back as latin1, is byte for byte the UTF-8 of `JSON.stringify` of the text
 * (V8 leaves U+007F and up alone). No UTF-8 decode and encode per frame; a WebAssembly SIMD
 * escaper measured no faster than this in bench/agent pty-json.
 */
function writeJsonString(data: Buffer, out: Buffer, at: number): number {
  return at + out.write(JSON.stringify(data.toString('latin1')), at, 'latin1');
}

/**
 * Frames are encoded here first, then copied at their exact size into a reused frame buffer:
 * room for the worst case (every byte escaped six-fold) once per process rather than per
 * frame buffer. Shared, since encoding is synchronous.
 */
let scratch = Buffer.allocUnsafeSlow(0);

/**
 * The bytes of `JSON.stringify({type:'stdout', data, encoding?})` for output `data`: UTF-8
 * text when it is valid UTF-8, else base64, as the protocol has it. Text is escaped from the
 * bytes, never decoded (writeJsonString); the frame is a copy in a reused buffer.
 */
export function encodeStdoutFrame(
  data: Buffer,
  buffers: FrameBuffers,
): { readonly frame: Buffer; readonly written: () => void } {
  const worst = HEAD.length + jsonStringMaxBytes(data.length) + BASE64_TAIL.length;
  if (scratch.length < worst) scratch = Buffer.allocUnsafeSlow(worst);
  let end = HEAD.copy(scratch, 0);
  if (isUtf8(data)) {
    end = writeJsonString(data, scratch, end);
    end += TEXT_TAIL.copy(scratch, end);
  } else {
    scratch[end++] = QUOTE;
    end += scratch.write(data.toString('base64'), end, 'latin1');
    scratch[end++] = QUOTE;
    end += BASE64_TAIL.copy(scratch, end);
  }
  return buffers.copy(scratch.subarray(0, end));
}
