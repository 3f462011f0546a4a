// Generated HTTP requests: a route of the service's table, its path and query parameters
// and body drawn from the route's schemas and mutated, then put on the wire with hostile
// encodings, headers, methods and framing.
import * as fc from 'fast-check';
import { abusiveHeader, CONTENT_TYPES, JUNK_METHODS, METHODS, type Credential } from './http-abuse.js';
import { mutated } from './mutate.js';
import {
  corruptUtf8,
  deepJsonText,
  hostileString,
  hugeString,
  invalidUtf8,
  randomBytes,
} from './weird-values.js';
import type { Framing, RawRequest } from './wire.js';

export interface RouteModel {
  readonly name: string;
  readonly method: string;
  /** OpenAPI-style template: `/v1/sandboxes/{id}`. */
  readonly path: string;
  readonly params: Readonly<Record<string, fc.Arbitrary<unknown>>>;
  readonly query?: Readonly<Record<string, fc.Arbitrary<unknown>>> | undefined;
  /** A JSON body's valid values, or `bytes` (an upload). */
  readonly body?: fc.Arbitrary<unknown> | 'bytes' | undefined;
  readonly form?: boolean;
  /** Documented success statuses. */
  readonly success: readonly number[];
}

export interface HttpSurface {
  readonly routes: readonly RouteModel[];
  /** `Authorization` values: good credentials of several strengths, and bad ones. */
  readonly authorization: fc.Arbitrary<Credential>;
  /** Real ids (sessions, threads, sandboxes) the path parameters sometimes take. */
  readonly ids: readonly string[];
  /** Makes a mutated body harmless to run (the agent's commands), keeping its shape. */
  readonly defuse?: (route: RouteModel, body: unknown) => unknown;
}

export interface HttpCase {
  readonly route: RouteModel;
  readonly request: RawRequest;
  /** A line for failure reports (what was generated; the bytes are in `request`). */
  readonly description: string;
}

/** Percent-encoding of the UTF-8 bytes of `text` (`/` kept when `keepSlash`). */
function percent(text: string | Buffer, keepSlash = false): string {
  let out = '';
  for (const byte of typeof text === 'string' ? Buffer.from(text, 'utf8') : text) {
    const char = String.fromCharCode(byte);
    out +=
      /[A-Za-z0-9._~-]/.test(char) || (keepSlash && char === '/')
        ? char
        : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  return out;
}

const stringOf = (value: unknown): string =>
  typeof value === 'string' ? value : (JSON.stringify(value) ?? '');

/** A path parameter: valid, a real id, hostile, huge, or bytes that are not UTF-8. */
const paramValue = (valid: fc.Arbitrary<unknown>, ids: readonly string[]): fc.Arbitrary<Buffer | string> =>
  fc.oneof(
    { arbitrary: valid.map(stringOf), weight: 4 },
    { arbitrary: ids.length === 0 ? fc.constant('x') : fc.constantFrom(...ids), weight: 3 },
    { arbitrary: hostileString, weight: 3 },
    { arbitrary: hugeString.map((text) => text.slice(0, 3000)), weight: 1 },
    { arbitrary: invalidUtf8, weight: 1 },
  );

/** How a parameter goes into the request line. */
type Encoding = 'percent' | 'raw' | 'bad-percent';
const encodingArb = fc.constantFrom<Encoding>(
  'percent',
  'percent',
  'percent',
  'percent',
  'raw',
  'bad-percent',
);

function encodeParam(value: Buffer | string, encoding: Encoding, keepSlash: boolean): Buffer {
  if (encoding === 'raw') return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const encoded = percent(value, keepSlash);
  return Buffer.from(
    encoding === 'bad-percent' ? `${encoded}%${encoded.length % 2 === 0 ? 'zz' : 'F'}` : encoded,
    'latin1',
  );
}

const BODY_FORMS = [
  'json',
  'json',
  'json',
  'json',
  'corrupt',
  'truncated',
  'big-number',
  'duplicate-key',
  'deep',
  'form',
  'none',
] as const;

/** `text` with a hostile twist of JSON text itself (what JSON.stringify cannot produce). */
function twisted(text: string, how: (typeof BODY_FORMS)[number], cut: number, deep: string): Buffer {
  const firstKey = /^\{"((?:[^"\\]|\\.)*)":/.exec(text)?.[1];
  switch (how) {
    case 'truncated':
      return Buffer.from(text.slice(0, cut % Math.max(text.length, 1)));
    case 'big-number':
      return Buffer.from(/\d/.test(text) ? text.replace(/\d+/, '9'.repeat(400)) : '1e999');
    case 'duplicate-key':
      return Buffer.from(firstKey === undefined ? text : text.replace(/^\{/, `{"${firstKey}":[[[[]]]],`));
    case 'deep':
      // The field's last occurrence wins: the first field becomes the deep value.
      return Buffer.from(
        firstKey === undefined || text === '{}' ? deep : `${text.slice(0, -1)},"${firstKey}":${deep}}`,
      );
    case 'form':
      return Buffer.from(new URLSearchParams({ body: text }).toString());
    case 'json':
    case 'corrupt':
    case 'none':
    default:
      return Buffer.from(text, 'utf8');
  }
}

interface BodyBytes {
  readonly bytes?: Buffer;
  readonly how: string;
}

function jsonBodyBytes(body: fc.Arbitrary<unknown>, form: boolean): fc.Arbitrary<BodyBytes> {
  return fc
    .tuple(mutated(body), fc.nat(), deepJsonText, fc.constantFrom(...BODY_FORMS))
    .chain(([{ value, mutation }, cut, deep, how]): fc.Arbitrary<BodyBytes> => {
      const text =
        form && typeof value === 'object' && value !== null
          ? new URLSearchParams(
              Object.entries(value).map(([k, v]): [string, string] => [k, stringOf(v)]),
            ).toString()
          : JSON.stringify(value);
      if (text === undefined || how === 'none') return fc.constant({ how: `no body (${mutation})` });
      const label = `${how} body (${mutation})`;
      if (how === 'corrupt') return corruptUtf8(text).map((bytes) => ({ bytes, how: label }));
      return fc.constant({ bytes: twisted(text, how, cut, deep), how: label });
    });
}

function bodyOf(route: RouteModel): fc.Arbitrary<BodyBytes> {
  if (route.body === 'bytes')
    return fc.oneof(
      randomBytes(4096).map((bytes) => ({ bytes, how: 'random bytes' })),
      hostileString.map((text) => ({ bytes: Buffer.from(text), how: 'hostile text' })),
      fc.constant({ how: 'no body' }),
    );
  if (route.body !== undefined) return jsonBodyBytes(route.body, route.form === true);
  return fc.oneof(
    { arbitrary: fc.constant({ how: 'no body' }), weight: 4 },
    { arbitrary: randomBytes(512).map((bytes) => ({ bytes, how: 'unexpected bytes' })), weight: 1 },
  );
}

/** The request target: the template with its parameters put in, then the query. */
function targetOf(route: RouteModel, surface: HttpSurface): fc.Arbitrary<{ target: Buffer; values: string }> {
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
  const params = names.map((name) =>
    fc.tuple(paramValue(route.params[name] ?? hostileString, surface.ids), encodingArb),
  );
  const queryEntries = Object.entries(route.query ?? {}).map(([name, valid]) =>
    fc.tuple(fc.constant(name), fc.oneof(valid.map(stringOf), hostileString, fc.constant('')), fc.boolean()),
  );
  const junkQuery = fc.array(fc.tuple(hostileString, hostileString), { maxLength: 2 });
  return fc
    .tuple(fc.tuple(...params), fc.tuple(...queryEntries), junkQuery, fc.boolean())
    .map(([values, query, junk, repeat]) => {
      let i = 0;
      const parts = route.path.split(/\{\w+\}/).flatMap((literal, index) => {
        const param = values[index];
        if (param === undefined) return [Buffer.from(literal)];
        return [Buffer.from(literal), encodeParam(param[0], param[1], names[i++] === 'path')];
      });
      const pairs = [
        ...query.filter(([, , keep]) => keep).map(([name, value]) => [name, value] as const),
        ...junk,
      ];
      if (repeat && pairs[0] !== undefined) pairs.push(pairs[0]);
      const search = pairs.map(([name, value]) => `${percent(name)}=${percent(value)}`).join('&');
      const target = Buffer.concat([...parts, Buffer.from(search === '' ? '' : `?${search}`)]);
      return {
        target,
        values: values.map(([value, encoding]) => `${encoding}:${stringOf(value).slice(0, 60)}`).join(' '),
      };
    });
}

export function httpCase(surface: HttpSurface): fc.Arbitrary<HttpCase> {
  return fc.constantFrom(...surface.routes).chain((route) =>
    fc
      .record({
        target: targetOf(route, surface),
        body: bodyOf(route),
        method: fc.oneof(
          { arbitrary: fc.constant(route.method), weight: 16 },
          { arbitrary: fc.constantFrom(...METHODS), weight: 3 },
          { arbitrary: fc.constantFrom(...JUNK_METHODS), weight: 1 },
        ),
        authorization: surface.authorization,
        contentType: fc.oneof(
          {
            arbitrary: fc.constant(
              route.form === true ? 'application/x-www-form-urlencoded' : 'application/json',
            ),
            weight: 6,
          },
          { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 2 },
          { arbitrary: fc.constant(undefined), weight: 1 },
        ),
        extra: fc.oneof(
          { arbitrary: fc.constant<[string, Buffer][]>([]), weight: 3 },
          { arbitrary: fc.array(abusiveHeader, { minLength: 1, maxLength: 3 }), weight: 1 },
        ),
        framing: fc.oneof(
          { arbitrary: fc.constant<Framing>('length'), weight: 24 },
          {
            arbitrary: fc.constantFrom<Framing>(
              'chunked',
              'bad-chunk',
              'short',
              'truncated',
              'two-lengths',
              'length-and-chunked',
            ),
            weight: 3,
          },
        ),
        version: fc.oneof(
          { arbitrary: fc.constant('HTTP/1.1'), weight: 30 },
          { arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1.1x'), weight: 1 },
        ),
      })
      .map(({ target, body, method, authorization, contentType, extra, framing, version }) => {
        const bytes =
          body.bytes !== undefined && surface.defuse !== undefined && route.body !== 'bytes'
            ? defused(surface, route, body.bytes)
            : body.bytes;
        const headers: [string, Buffer][] = [];
        if (authorization.header !== undefined)
          headers.push(['Authorization', Buffer.from(authorization.header, 'utf8')]);
        if (contentType !== undefined && (bytes !== undefined || contentType === ''))
          headers.push(['Content-Type', Buffer.from(contentType)]);
        headers.push(...extra);
        const request: RawRequest = { method, target: target.target, headers, body: bytes, framing, version };
        const description = `${route.name}: ${authorization.label}, ${method} ${target.target.toString('latin1').slice(0, 160)} [${target.values}] ${body.how}, ${framing}, ${version}, content-type ${String(contentType)}, extra headers ${extra.map(([name]) => name).join(',') || 'none'}`;
        return { route, request, description };
      }),
  );
}

/** The body re-encoded after `defuse` when it is JSON; anything else is harmless as it is. */
function defused(surface: HttpSurface, route: RouteModel, bytes: Buffer): Buffer {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    const before = JSON.stringify(value);
    const after = JSON.stringify(surface.defuse!(route, structuredClone(value)));
    return after === before ? bytes : Buffer.from(after, 'utf8');
  } catch {
    return bytes;
  }
}
