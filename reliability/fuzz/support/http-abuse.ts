// Header abuse: hostile values for the headers the services read (and some they should
// ignore), junk methods and content types, and credentials that are almost right.
import * as fc from 'fast-check';
import { hostileString, hugeString } from './weird-values.js';

/** An `Authorization` value (absent: none sent) and what it is, for failure reports. */
export interface Credential {
  readonly header?: string;
  readonly label: string;
}

/** Not a control character, tab excepted. */
function isHeaderSafe(char: string): boolean {
  const code = char.codePointAt(0) ?? 0;
  return code === 0x09 || (code >= 0x20 && code !== 0x7f);
}

/**
 * Header text: usually what Node's parser lets through (no control characters but tab), so
 * that the input reaches the service; sometimes raw, CR LF and NUL included.
 */
export const headerText: fc.Arbitrary<string> = fc.oneof(
  {
    arbitrary: hostileString.map((text) => text.split('').filter(isHeaderSafe).join('')),
    weight: 6,
  },
  { arbitrary: hostileString, weight: 1 },
);

/** Credentials that must be refused, around a good one (`good`). */
export function badCredentials(good: string): fc.Arbitrary<Credential> {
  return fc.oneof(
    headerText.map((text) => ({ header: `Bearer ${text}`, label: 'bearer hostile text' })),
    hugeString.map((text) => ({ header: `Bearer ${text.slice(0, 8000)}`, label: 'bearer huge text' })),
    fc
      .constantFrom(
        'Bearer',
        'Bearer ',
        `bearer ${good}`,
        `Bearer  ${good}`,
        `Bearer ${good}x`,
        `Bearer ${good.slice(0, -1)}`,
        `Bearer ${good},${good}`,
        'Bearer a.b.c',
        'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
        'Basic Zm9vOmJhcg==',
        'Basic',
        'Negotiate abc',
      )
      .map((header) => ({ header, label: `almost right: ${header.replace(good, '<good>').slice(0, 40)}` })),
  );
}

export const JUNK_METHODS = ['FOO', 'get', 'PROPFIND', 'TRACE', 'M-SEARCH', 'CONNECT', 'GET\u0000'];
export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/x-www-form-urlencoded',
  'text/plain',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  'application/json;;;==',
  '*/*',
  '',
];

/** Headers beyond the route's: each a classic of header abuse. */
export const abusiveHeader: fc.Arbitrary<[string, Buffer]> = fc
  .oneof(
    fc.tuple(
      fc.constantFrom(
        'X-Request-Id',
        'Idempotency-Key',
        'Origin',
        'Accept',
        'Cookie',
        'X-Forwarded-For',
        'Range',
        'If-Match',
        'If-None-Match',
        'If-Range',
        'Accept-Encoding',
        'User-Agent',
      ),
      headerText,
    ),
    fc.tuple(
      fc.constantFrom('Content-Encoding'),
      fc.constantFrom('gzip', 'br', 'deflate', 'x-junk', 'identity, gzip'),
    ),
    fc.tuple(fc.constantFrom('Expect'), fc.constantFrom('100-continue', 'junk')),
    fc.tuple(
      fc.constantFrom('Range'),
      fc.constantFrom(
        'bytes=5-1',
        'bytes=-',
        'bytes=0-0,1-1,2-2',
        'bytes=99999999999999999999-',
        'items=1-2',
        'bytes=-0',
      ),
    ),
    fc.tuple(
      fc.constantFrom('Idempotency-Key', 'X-Request-Id', 'Cookie'),
      hugeString.map((text) => text.slice(0, 12_000)),
    ),
    fc.tuple(fc.constantFrom('X-Padding'), fc.constant('a'.repeat(20_000))),
    fc.tuple(fc.constantFrom('X Bad Name', 'X:Colon', 'X\u00e9'), fc.constant('1')),
  )
  .map(([name, value]) => [name, typeof value === 'string' ? Buffer.from(value, 'utf8') : value]);
