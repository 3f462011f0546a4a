import { z } from 'zod';

/**
 * Wire primitives shared by every route and frame.
 *
 * Ids (thread, session, binding, sandbox, actor, scope ids) are opaque strings of
 * 1..200 characters from `[A-Za-z0-9_\-.:@]`. Why this set:
 * - every character is an RFC 3986 `pchar` that needs no percent-encoding, so an id
 *   can be put into a URL path (`/threads/{thread_id}/sandbox`) verbatim and compared
 *   byte-for-byte with what the router decodes;
 * - no `/`, `?`, `#`, `%`, whitespace, quotes or control characters, so an id cannot
 *   change a route, a log line, a header or a shell command it is interpolated into;
 * - `:` and `@` keep prefixed and principal-like ids usable (`usr:alice@acme`, `thr_1`).
 * The path segments `.` and `..` are rejected because clients normalize them away.
 */
export const ID_MAX_LENGTH = 200;
export const ID_PATTERN = /^[A-Za-z0-9_\-.:@]+$/;

export const Id = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(ID_MAX_LENGTH, { message: `must be at most ${ID_MAX_LENGTH} characters` })
  .regex(ID_PATTERN, { message: 'may contain only letters, digits and _ - . : @' })
  .refine((id) => id !== '.' && id !== '..', { message: 'must not be "." or ".."' })
  .describe('Opaque id: 1..200 characters of [A-Za-z0-9_-.:@]');
export type Id = z.infer<typeof Id>;

/** RFC 3339 date-time with `Z` or a numeric offset, e.g. `2026-02-27T20:20:00Z`. */
export const Timestamp = z.iso
  .datetime({ offset: true, message: 'must be an RFC 3339 date-time such as 2026-02-27T20:20:00Z' })
  .describe('RFC 3339 date-time');
export type Timestamp = z.infer<typeof Timestamp>;

/** Formats a Date the way the platform writes timestamps (UTC, millisecond precision, `Z`). */
export function toTimestamp(date: Date): Timestamp {
  return date.toISOString();
}

/** Base URL of a dataplane HTTP API (`http` only for local development; brokers should hand out `https`). */
export const HttpUrl = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' });
export type HttpUrl = z.infer<typeof HttpUrl>;

/** Base URL of a dataplane WebSocket API (`ws` only for local development). */
export const WsUrl = z.url({ protocol: /^wss?$/, message: 'must be a ws(s) URL' });
export type WsUrl = z.infer<typeof WsUrl>;

/** A provider name such as `langsmith`, `e2b`, `local`; lower-case, 1..64 characters. */
export const ProviderName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9_-]*$/, { message: 'must be lower-case letters, digits, _ or -' });
export type ProviderName = z.infer<typeof ProviderName>;

/** An opaque bearer token (JWT or opaque); never logged. */
export const BearerToken = z.string().min(1, { message: 'must not be empty' }).max(8192);
export type BearerToken = z.infer<typeof BearerToken>;

/** A whole, positive number of seconds. */
export const PositiveSeconds = z.number().int().positive();
export type PositiveSeconds = z.infer<typeof PositiveSeconds>;

/**
 * Where the sandbox's processes see their workspace, also their HOME and default working
 * directory: `/workspace` wherever they are confined (docs/files.md). This broker always
 * sends it; optional so that clients still parse answers of servers that omit it
 * (docs/protocol.md#compatibility-rules: such a server's sandboxes are taken to use `/workspace`).
 */
export const WorkspacePath = z
  .string()
  .regex(/^\//, 'must be an absolute path')
  .optional()
  .describe('The workspace as processes of the sandbox see it, e.g. /workspace');
