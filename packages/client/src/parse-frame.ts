import { SERVER_FRAME_TYPES, ServerFrame } from '@sbx/protocol';
import { ProtocolError, problemOf, routeOf } from './protocol-error.js';

/** A text frame read: the frame, or why it cannot be read. */
export type ParsedFrame = { readonly frame: ServerFrame } | { readonly error: ProtocolError };

/**
 * Reads a server's text frame on the socket of `url`. Undefined for a well-formed frame of
 * a type this SDK does not know: a newer agent may send one, and skipping it keeps older
 * clients working. Anything else that is not a valid frame is a ProtocolError naming the
 * route and the frame's type (never its content, which may carry a token).
 */
export function parseFrame(text: string, url: string): ParsedFrame | undefined {
  const route = routeOf('WS', url);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: malformed(route, 'a frame', err) };
  }
  const parsed = ServerFrame.safeParse(value);
  if (parsed.success) return { frame: parsed.data };
  const type = typeOf(value);
  if (type !== undefined && !(SERVER_FRAME_TYPES as readonly string[]).includes(type)) return undefined;
  return { error: malformed(route, type === undefined ? 'a frame' : `a "${type}" frame`, parsed.error) };
}

function malformed(route: string, frame: string, cause: unknown): ProtocolError {
  return new ProtocolError(`${route}: the server sent ${frame} that ${problemOf(cause)}`, { route, cause });
}

/** The `type` of a JSON object, when it is a short string (a long one is no type name). */
function typeOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || !('type' in value)) return undefined;
  const { type } = value;
  return typeof type === 'string' && /^[a-z_]{1,32}$/.test(type) ? type : undefined;
}
