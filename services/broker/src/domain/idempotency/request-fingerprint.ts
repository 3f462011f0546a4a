// What "the same request" means for an Idempotency-Key: the same method, path
// and JSON body, whatever order the body's keys were written in.
import { createHash } from 'node:crypto';
import { SbxError } from '@sbx/protocol';

const MAX_KEY_LENGTH = 255;
const KEY_TEXT = /^[\x21-\x7e]+$/;

/** The header's value, checked: 1..255 visible ASCII characters (a UUID is the usual choice). */
export function parseIdempotencyKey(value: string): string {
  if (value.length > MAX_KEY_LENGTH || !KEY_TEXT.test(value)) {
    throw new SbxError(
      'BAD_REQUEST',
      `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters, such as a UUID`,
    );
  }
  return value;
}

/** JSON with object keys sorted at every level. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
      .filter(([, entry]) => entry !== undefined)
      .toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonicalJson(body ?? null)}`, 'utf8')
    .digest('base64url');
}
