/**
 * WebSocket close codes of the dataplane endpoints (`/v1/shell/ws`, `/v1/exec/ws`, watch).
 * 1000–1015 are RFC 6455 codes; 4000–4999 are ours, mirroring the HTTP status they stand for.
 */
export const WS_CLOSE_CODES = {
  /** Normal closure: the process exited, or either side sent `close`. */
  NORMAL: 1000,
  /** Policy violation: no/invalid `auth` frame, auth timeout, a malformed or out-of-order frame. */
  POLICY_VIOLATION: 1008,
  /** Message too big: a frame larger than MAX_FRAME_BYTES. */
  MESSAGE_TOO_BIG: 1009,
  /** Internal error: the server failed; the client may reconnect. */
  INTERNAL_ERROR: 1011,
  /** The token expired during the connection: refresh it, reconnect, send `auth` again. */
  TOKEN_EXPIRED: 4401,
  /**
   * The token lacks the capability a `start` needs (opening a shell with `shell:ro`). A token lacking
   * every scope of the endpoint is refused at `auth` with 1008; an observer's `stdin` gets an error frame.
   */
  CAPABILITY_DENIED: 4403,
  /** `start` named a `shell_session_id` that does not exist (any more). */
  SHELL_NOT_FOUND: 4404,
} as const;
export type WsCloseCodeName = keyof typeof WS_CLOSE_CODES;
export type WsCloseCode = (typeof WS_CLOSE_CODES)[WsCloseCodeName];

/**
 * A connection that has not sent a valid `auth` frame within this time is closed with 1008
 * (docs/protocol.md#first-frame-authentication).
 */
export const AUTH_TIMEOUT_MS = 5_000;

/** Largest text frame, in UTF-8 bytes, a client may send (1 MiB); larger ones close with 1009. */
export const MAX_FRAME_BYTES = 1_048_576;

/** The longest close reason RFC 6455 §5.5 allows, in UTF-8 bytes (`ws` throws past it). */
export const MAX_CLOSE_REASON_BYTES = 123;

/**
 * `text` as a close reason: whole when it fits, else cut on a character boundary and marked
 * with "...". Reasons can quote what a caller sent, so a short sentence in characters may
 * still be too long in bytes.
 */
export function wsCloseReason(text: string): string {
  if (utf8Bytes(text) <= MAX_CLOSE_REASON_BYTES) return text;
  let cut = '';
  let bytes = 3;
  for (const char of text) {
    bytes += utf8Bytes(char);
    if (bytes > MAX_CLOSE_REASON_BYTES) break;
    cut += char;
  }
  return `${cut}...`;
}

// TextEncoder rather than Buffer: the protocol package also runs in browsers.
const encoder = new TextEncoder();
function utf8Bytes(text: string): number {
  return encoder.encode(text).length;
}
