// The hostile material the mutations draw from: unicode edge cases, wrong-typed and huge
// JSON values, deep nesting, and raw bytes that are not UTF-8.
import * as fc from 'fast-check';

/** Code units and sequences that break naive text handling. */
export const EDGE_CHARACTERS = [
  '\u0000', // NUL
  '\uD800', // lone high surrogate
  '\uDFFF', // lone low surrogate
  '\uDC00\uD800', // surrogates in the wrong order
  '\u202E', // right-to-left override
  '\u200F', // right-to-left mark
  '\u0627\u0644\u0639\u0631\u0628\u064A\u0629', // Arabic (RTL script)
  'e\u0301\u0301\u0301\u0301\u0301', // stacked combining marks
  '\u200D', // zero-width joiner
  '\uFEFF', // byte order mark
  '\u2028', // line separator (breaks JavaScript string literals)
  '\uFFFF', // noncharacter
  '\uFFFD', // replacement character
  '\u{1F600}', // astral (surrogate pair)
  '\u0130', // dotted capital I (changes length when lower-cased)
  '\r\n', // header and line injection
  '\t',
  '\u007F', // DEL
  '\u0085', // next line (C1)
  '%',
  '%00',
  '%zz',
  '%ff%fe',
  '../',
  '..\\',
  '/',
  '\\',
  '"',
  '{',
  '[',
] as const;

/** One character: usually any code point (astral included), often an edge case. */
export const hostileUnit: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), weight: 3 },
  { arbitrary: fc.constantFrom(...EDGE_CHARACTERS), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }), weight: 3 },
);

/** Short hostile strings (names, ids, values). */
export const hostileString: fc.Arbitrary<string> = fc.string({ unit: hostileUnit, maxLength: 24 });

/** Strings far beyond any field's limit (within the services' body limits, mostly). */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(hostileUnit, fc.constantFrom(4_097, 65_537, 300_000))
  .map(([unit, length]) => unit.repeat(Math.ceil(length / unit.length)));

/** Numbers at the edges of what JSON, JavaScript and databases hold. */
export const edgeNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    -1,
    0.5,
    1e308,
    -1e308,
    5e-324,
    2 ** 31,
    2 ** 32,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 63),
    2 ** 64,
    Number.MAX_SAFE_INTEGER,
    Number.MIN_SAFE_INTEGER,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** `depth` nested arrays or objects around a leaf: parsers and validators that recurse. */
export function nested(depth: number, kind: 'array' | 'object', leaf: unknown = 1): unknown {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
}

/** Nested values the generator can still serialize (JSON.stringify recurses: ~4 000 levels). */
export const deepValue: fc.Arbitrary<unknown> = fc
  .tuple(fc.constantFrom(64, 1_000), fc.constantFrom('array' as const, 'object' as const))
  .map(([depth, kind]) => nested(depth, kind));

/** JSON text nested far deeper than any serializer recurses, within the 256 KiB body limit. */
export const deepJsonText: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(20_000, 40_000), fc.boolean())
  .map(([depth, arrays]) =>
    arrays ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
  );

/** A value of any JSON type, mostly small, sometimes huge or deep. */
export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constantFrom(null, true, false, '', [], {}, '0', 'null', 'true'), weight: 4 },
  { arbitrary: hostileString, weight: 4 },
  { arbitrary: edgeNumber, weight: 4 },
  { arbitrary: fc.array(hostileString, { maxLength: 5 }), weight: 2 },
  { arbitrary: fc.dictionary(hostileString, hostileString, { maxKeys: 4 }), weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 2 },
  { arbitrary: hugeString, weight: 1 },
  { arbitrary: deepValue, weight: 1 },
  {
    arbitrary: fc.array(fc.constant(0), { minLength: 10_000, maxLength: 20_000 }),
    weight: 1,
  },
);

/** Property names objects should never trust. */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'type'),
  hostileString,
);

/** Bytes that are not valid UTF-8: stray continuation bytes, overlong forms, CESU surrogates. */
export const INVALID_UTF8: readonly Buffer[] = [
  Buffer.from([0xff]),
  Buffer.from([0xfe, 0xff]),
  Buffer.from([0x80]),
  Buffer.from([0xc0, 0x80]), // overlong NUL
  Buffer.from([0xe0, 0x80, 0xaf]), // overlong '/'
  Buffer.from([0xed, 0xa0, 0x80]), // encoded surrogate
  Buffer.from([0xf4, 0x90, 0x80, 0x80]), // beyond U+10FFFF
  Buffer.from([0xe2, 0x82]), // truncated sequence
];

export const invalidUtf8: fc.Arbitrary<Buffer> = fc.constantFrom(...INVALID_UTF8);

/** Random bytes, binary by nature. */
export const randomBytes = (maxLength: number): fc.Arbitrary<Buffer> =>
  fc.uint8Array({ maxLength }).map((bytes) => Buffer.from(bytes));

/** `text` as UTF-8 with invalid sequences spliced in at drawn positions. */
export const corruptUtf8 = (text: string): fc.Arbitrary<Buffer> =>
  fc.array(fc.tuple(fc.nat(), invalidUtf8), { minLength: 1, maxLength: 3 }).map((splices) => {
    let bytes = Buffer.from(text, 'utf8');
    for (const [at, bad] of splices) {
      const cut = bytes.length === 0 ? 0 : at % bytes.length;
      bytes = Buffer.concat([bytes.subarray(0, cut), bad, bytes.subarray(cut)]);
    }
    return bytes;
  });
