import type { z } from 'zod';
import { ERROR_TABLE, type ErrorBody, type ErrorCode } from './errors.js';
import { CLIENT_FRAME_SCHEMAS, CLIENT_FRAME_TYPES, type ClientFrameFor, type WsEndpoint } from './frames.js';
import { SERVER_FRAME_SCHEMAS, SERVER_FRAME_TYPES, type ServerFrameFor } from './server-frames.js';
import { issuesOf, type ValidationIssue } from './validation.js';
import { MAX_FRAME_BYTES, WS_CLOSE_CODES, type WsCloseCode } from './ws-close.js';

/**
 * Why a frame was refused:
 * - `too_big`: larger than the byte limit (close 1009);
 * - `malformed_json`: not JSON at all;
 * - `unknown_type`: JSON object whose `type` this endpoint does not speak;
 * - `invalid_frame`: anything else that breaks the schema (not an object, no `type`,
 *   a missing or wrong field, exec `start` with both `argv` and `cmd`…).
 */
export type FrameParseFailureReason = 'too_big' | 'malformed_json' | 'unknown_type' | 'invalid_frame';

export interface FrameParseFailure {
  readonly ok: false;
  readonly reason: FrameParseFailureReason;
  /** A sentence a user can act on; never echoes the frame's content. */
  readonly message: string;
  /** The frame's `type`, when it had a string one. */
  readonly frame_type?: string;
  readonly issues: ValidationIssue[];
  /** What to send back in an `error` frame (BAD_REQUEST, or PAYLOAD_TOO_LARGE). */
  readonly error: ErrorBody;
  /** The close code to use if the receiver closes the connection because of it. */
  readonly close_code: WsCloseCode;
}

export type FrameParseResult<F> = { readonly ok: true; readonly frame: F } | FrameParseFailure;

export interface FrameParseOptions {
  /** Largest accepted frame in UTF-8 bytes; default MAX_FRAME_BYTES. */
  readonly maxBytes?: number;
}

/** UTF-8 length of a JS string without allocating (lone surrogates count as 3, like TextEncoder's U+FFFD). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

function failure(
  reason: FrameParseFailureReason,
  message: string,
  extra: { frame_type?: string; issues?: ValidationIssue[] } = {},
): FrameParseFailure {
  const code: ErrorCode = reason === 'too_big' ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST';
  const issues = extra.issues ?? [];
  return {
    ok: false,
    reason,
    message,
    ...(extra.frame_type === undefined ? {} : { frame_type: extra.frame_type }),
    issues,
    error: {
      code,
      message,
      retryable: ERROR_TABLE[code].retryable,
      ...(issues.length === 0 ? {} : { details: { issues } }),
    },
    close_code: reason === 'too_big' ? WS_CLOSE_CODES.MESSAGE_TOO_BIG : WS_CLOSE_CODES.POLICY_VIOLATION,
  };
}

function parseFrame<F>(
  side: 'client' | 'server',
  endpoint: WsEndpoint,
  knownTypes: readonly string[],
  schema: z.ZodType<F>,
  raw: string,
  options: FrameParseOptions,
): FrameParseResult<F> {
  const maxBytes = options.maxBytes ?? MAX_FRAME_BYTES;
  // A JS string of n UTF-16 units is at most 3n UTF-8 bytes: count only when it could be over.
  if (raw.length * 3 > maxBytes && utf8ByteLength(raw) > maxBytes) {
    return failure('too_big', `frame is larger than ${maxBytes} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return failure('malformed_json', 'frame is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return failure('invalid_frame', 'frame must be a JSON object with a string "type"');
  }
  const type: unknown = (value as { type?: unknown }).type;
  if (typeof type !== 'string') {
    return failure('invalid_frame', 'frame must have a string "type"', {
      issues: [{ path: 'type', message: 'is required' }],
    });
  }
  const allowed = CLIENT_OR_SERVER_TYPES[endpoint][side];
  if (!allowed.includes(type)) {
    const known = knownTypes.includes(type);
    return failure(
      'unknown_type',
      known
        ? `frame type "${type}" is not accepted on the ${endpoint} endpoint`
        : `unknown frame type "${truncate(type)}"; expected one of ${allowed.join(', ')}`,
      { frame_type: type },
    );
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, frame: parsed.data };
  const issues = issuesOf(parsed.error);
  const first = issues[0];
  const detail =
    first === undefined ? 'is invalid' : `${first.path === '' ? '' : `${first.path} `}${first.message}`;
  return failure('invalid_frame', `invalid "${type}" frame: ${detail}`, { frame_type: type, issues });
}

function truncate(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/** The `type` literals of a discriminated union's members. */
function typesOf(union: {
  readonly options: readonly { readonly shape: { readonly type: { readonly value: string } } }[];
}): string[] {
  return [...new Set(union.options.map((option) => option.shape.type.value))];
}

/** Frame types each endpoint accepts, per direction, read from the unions themselves. */
const CLIENT_OR_SERVER_TYPES: Record<WsEndpoint, Record<'client' | 'server', string[]>> = {
  shell: { client: typesOf(CLIENT_FRAME_SCHEMAS.shell), server: typesOf(SERVER_FRAME_SCHEMAS.shell) },
  exec: { client: typesOf(CLIENT_FRAME_SCHEMAS.exec), server: typesOf(SERVER_FRAME_SCHEMAS.exec) },
  watch: { client: typesOf(CLIENT_FRAME_SCHEMAS.watch), server: typesOf(SERVER_FRAME_SCHEMAS.watch) },
};

// Mapped types let `[endpoint]` keep the endpoint-specific frame type for a generic E.
const CLIENT_SCHEMA: { [E in WsEndpoint]: z.ZodType<ClientFrameFor<E>> } = CLIENT_FRAME_SCHEMAS;
const SERVER_SCHEMA: { [E in WsEndpoint]: z.ZodType<ServerFrameFor<E>> } = SERVER_FRAME_SCHEMAS;

/** Frame types an endpoint accepts from the client. */
export function clientFrameTypes(endpoint: WsEndpoint): readonly string[] {
  return CLIENT_OR_SERVER_TYPES[endpoint].client;
}

/**
 * Parses one text message a client sent to `endpoint`. Never throws: the result says
 * whether it was too big, not JSON, of a type the endpoint does not speak, or in
 * violation of that type's schema.
 */
export function parseClientFrame<E extends WsEndpoint>(
  endpoint: E,
  raw: string,
  options: FrameParseOptions = {},
): FrameParseResult<ClientFrameFor<E>> {
  return parseFrame('client', endpoint, CLIENT_FRAME_TYPES, CLIENT_SCHEMA[endpoint], raw, options);
}

/** The SDK's counterpart: parses one text message the server sent on `endpoint`. Never throws. */
export function parseServerFrame<E extends WsEndpoint>(
  endpoint: E,
  raw: string,
  options: FrameParseOptions = {},
): FrameParseResult<ServerFrameFor<E>> {
  return parseFrame('server', endpoint, SERVER_FRAME_TYPES, SERVER_SCHEMA[endpoint], raw, {
    maxBytes: options.maxBytes ?? Number.POSITIVE_INFINITY,
  });
}
