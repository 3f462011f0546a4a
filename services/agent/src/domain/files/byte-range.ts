import { SbxError } from '@sbx/protocol';

/** Inclusive byte offsets, as in `Content-Range: bytes start-end/size`. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/;

/**
 * The range a `Range` header asks for, of a file of `size` bytes:
 * - undefined: serve the whole file (no header, a syntax we do not parse, or several
 *   ranges; RFC 9110 §14.2 lets a server ignore Range, and one full body beats multipart);
 * - RANGE_NOT_SATISFIABLE (416): a well-formed range that starts past the end.
 */
export function parseByteRange(header: string | undefined, size: number): ByteRange | undefined {
  if (header === undefined) return undefined;
  const match = SINGLE_RANGE.exec(header.trim());
  if (match === null) return undefined;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return undefined;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) throw unsatisfiable(size);
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return undefined;
  if (start >= size) throw unsatisfiable(size);
  return { start, end };
}

function unsatisfiable(size: number): SbxError {
  return new SbxError('RANGE_NOT_SATISFIABLE', `requested range is not within the file's ${size} bytes`, {
    details: { size },
  });
}
