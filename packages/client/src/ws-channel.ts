import { WebSocket } from 'ws';
import {
  WS_CLOSE_CODES,
  type ServerFrame,
  type ShellClientFrame,
  type ExecClientFrame,
  type WatchClientFrame,
} from '@sbx/protocol';
import { clientError, type SbxClientError } from './errors.js';
import type { TokenSource } from './credentials.js';
import { timeoutError, transportError } from './http-errors.js';
import { DEFAULT_KEEP_ALIVE, LivenessCheck, type KeepAlive } from './keep-alive.js';
import { parseFrame } from './parse-frame.js';
import type { ProtocolError } from './protocol-error.js';
import { abortReason, type RetryPolicy } from './retry.js';

/** What every dataplane socket needs: where, with which token, how to retry, how long to wait. */
export interface SocketContext {
  readonly wsUrl: string;
  readonly tokens: TokenSource;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  /** How a connection that died silently is noticed (default DEFAULT_KEEP_ALIVE); `false`: never. */
  readonly keepAlive?: KeepAlive | false;
}

export interface ChannelOptions {
  readonly signal?: AbortSignal | undefined;
  readonly keepAlive?: KeepAlive | false | undefined;
}

/** The URL of a dataplane WebSocket route (`v1/exec/ws`) under the sandbox's ws base. */
export function socketUrl(ctx: SocketContext, route: string): string {
  return `${ctx.wsUrl.replace(/\/$/, '')}/${route}`;
}

export interface ChannelHandlers {
  onFrame(frame: ServerFrame): void;
  onBinary?(data: Buffer): void;
  /** The socket closed after authentication; `error` is what the close means, if anything. */
  onClose(code: number, error: SbxClientError | undefined): void;
}

/** What a close code means for the client. Undefined: a normal end, nothing to report. */
export function errorOfClose(code: number, reason: string): SbxClientError | undefined {
  const options = { closeCode: code };
  const said = reason === '' ? '' : `: ${reason}`;
  switch (code) {
    case WS_CLOSE_CODES.NORMAL:
      return undefined;
    case WS_CLOSE_CODES.POLICY_VIOLATION:
      return clientError(
        'UNAUTHENTICATED',
        `the sandbox rejected the connection (1008${said}); not retried`,
        options,
      );
    case WS_CLOSE_CODES.CAPABILITY_DENIED:
      return clientError('CAPABILITY_DENIED', `the token lacks the capability for this${said}`, options);
    case WS_CLOSE_CODES.TOKEN_EXPIRED:
      return clientError('SESSION_EXPIRED', `the token expired during the connection${said}`, options);
    case WS_CLOSE_CODES.SHELL_NOT_FOUND:
      return clientError('NOT_FOUND', `no such shell session${said}`, options);
    case WS_CLOSE_CODES.MESSAGE_TOO_BIG:
      return clientError('PAYLOAD_TOO_LARGE', `a frame was too large${said}`, options);
    default:
      return clientError('BACKEND_UNAVAILABLE', `the connection dropped (${code}${said})`, options);
  }
}

/** The typed error of an `error` frame the agent sent (a refused `start`, a timeout, a backlog). */
export function errorOfFrame(frame: Extract<ServerFrame, { type: 'error' }>, what: string): SbxClientError {
  const { code, message, details } = frame.error;
  return clientError(code, `${what}: ${message}`, details === undefined ? {} : { details });
}

/** Whether a dropped connection may be opened again (not a rejection, not a missing shell). */
export function isReconnectable(code: number): boolean {
  const final: number[] = [
    WS_CLOSE_CODES.NORMAL,
    WS_CLOSE_CODES.POLICY_VIOLATION,
    WS_CLOSE_CODES.CAPABILITY_DENIED,
    WS_CLOSE_CODES.SHELL_NOT_FOUND,
    WS_CLOSE_CODES.MESSAGE_TOO_BIG,
  ];
  return !final.includes(code);
}

const SECURITY_CODES: readonly string[] = ['UNAUTHENTICATED', 'FORBIDDEN', 'CAPABILITY_DENIED'];

/**
 * The agent sends an `error` frame before it closes a rejected connection with 1008; its
 * code is more precise (a token without the capability is CAPABILITY_DENIED, not
 * UNAUTHENTICATED). Only security codes are taken from it, so a 1008 is never retried.
 */
function rejectionOf(
  code: number,
  reason: string,
  said: ServerFrame | undefined,
): SbxClientError | undefined {
  const error = errorOfClose(code, reason);
  if (said?.type !== 'error' || code !== WS_CLOSE_CODES.POLICY_VIOLATION) return error;
  if (!SECURITY_CODES.includes(said.error.code)) return error;
  const message = `the sandbox rejected the connection: ${said.error.message}; not retried`;
  return clientError(said.error.code, message, { closeCode: code });
}

/** RFC 6455's code for a connection lost without a close frame (never sent on the wire). */
const ABNORMAL_CLOSURE = 1006;

/** A socket ended by the keep-alive: what its close means. */
function silenceError(keepAlive: KeepAlive): SbxClientError {
  const ms = keepAlive.idleMs + keepAlive.timeoutMs;
  return clientError(
    'BACKEND_UNAVAILABLE',
    `the connection went silent: nothing from the sandbox for ${ms} ms, a ping unanswered; it was ended as dead`,
    { closeCode: ABNORMAL_CLOSURE },
  );
}

/**
 * An authenticated dataplane WebSocket. Resolves once `auth_ok` arrived; afterwards every
 * refreshed token is sent as a new `auth` frame, so the agent never closes it for expiry,
 * and a connection silent past its keep-alive is ended (1006, see KeepAlive).
 * An HTTP 401/403 on the upgrade or a 1008/4403 close raises a SecurityError at once. A
 * frame that cannot be read fails the connect, or afterwards closes the socket (1008, as
 * the agent does for a malformed frame; not reconnected) with that ProtocolError.
 */
export function openChannel(
  url: string,
  tokens: TokenSource,
  handlers: ChannelHandlers,
  timeoutMs: number,
  options: ChannelOptions = {},
): Promise<Channel> {
  const { signal } = options;
  const keepAlive = options.keepAlive ?? DEFAULT_KEEP_ALIVE;
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal));
      return;
    }
    // One message per tick: output right behind `start`'s answer then reaches listeners a
    // caller adds as soon as `Shell.open` resolves, instead of being delivered before them.
    const socket = new WebSocket(url, { perMessageDeflate: false, allowSynchronousEvents: false });
    let authed = false;
    let liveness: LivenessCheck | undefined;
    let rejection: ServerFrame | undefined;
    let malformed: ProtocolError | undefined;
    const onAbort = (): void => fail(abortReason(signal));
    const fail = (err: Error): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.terminate();
      reject(err);
    };
    const onMalformed = (err: ProtocolError): void => {
      if (!authed) return fail(err);
      malformed = err;
      socket.close(WS_CLOSE_CODES.POLICY_VIOLATION, 'malformed frame');
    };
    const timer = setTimeout(() => fail(timeoutError(`connect ${url}`, timeoutMs)), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      const code = status === 401 ? 'UNAUTHENTICATED' : status === 403 ? 'FORBIDDEN' : 'BACKEND_UNAVAILABLE';
      fail(clientError(code, `connect ${url}: HTTP ${status}`, { httpStatus: status }));
    });
    socket.on('error', (err) => {
      if (!authed) fail(transportError(`connect ${url}`, err));
    });
    socket.on('open', () => {
      tokens.fresh().then(
        (token) => socket.send(JSON.stringify({ type: 'auth', token })),
        (err: unknown) => fail(clientError('UNAUTHENTICATED', `no token to connect with: ${String(err)}`)),
      );
    });
    socket.on('ping', () => liveness?.heard());
    socket.on('pong', () => liveness?.heard());
    socket.on('message', (data, isBinary) => {
      liveness?.heard();
      const buffer = Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data);
      if (malformed !== undefined) return;
      if (isBinary) {
        handlers.onBinary?.(buffer);
        return;
      }
      const parsed = parseFrame(buffer.toString('utf8'), url);
      if (parsed === undefined) return;
      if ('error' in parsed) {
        onMalformed(parsed.error);
        return;
      }
      const { frame } = parsed;
      if (!authed && frame.type === 'auth_ok') {
        authed = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (keepAlive !== false) liveness = new LivenessCheck(socket, keepAlive, () => socket.terminate());
        resolve(new Channel(socket, tokens, liveness));
        return;
      }
      if (authed) handlers.onFrame(frame);
      else if (frame.type === 'error') rejection = frame;
    });
    socket.on('close', (code, reason) => {
      liveness?.stop();
      if (!authed) {
        const error = rejectionOf(code, reason.toString('utf8'), rejection);
        fail(error ?? clientError('BACKEND_UNAVAILABLE', `connect ${url}: closed before auth`));
      } else if (malformed !== undefined) handlers.onClose(WS_CLOSE_CODES.POLICY_VIOLATION, malformed);
      else if (liveness?.dead === true && keepAlive !== false)
        handlers.onClose(ABNORMAL_CLOSURE, silenceError(keepAlive));
      else handlers.onClose(code, errorOfClose(code, reason.toString('utf8')));
    });
  });
}

/** The authenticated socket; re-authenticates with each refreshed token. */
export class Channel {
  readonly #stopListening: () => void;

  constructor(
    readonly socket: WebSocket,
    tokens: TokenSource,
    private readonly liveness?: LivenessCheck,
  ) {
    this.#stopListening = tokens.onRefresh((credential) =>
      this.send({ type: 'auth', token: credential.token }),
    );
    socket.once('close', () => this.#stopListening());
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  send(frame: ShellClientFrame | ExecClientFrame | WatchClientFrame): void {
    if (this.open) this.socket.send(JSON.stringify(frame));
  }

  /** Stops reading (TCP then pushes back on the agent); the keep-alive waits meanwhile. */
  pause(): void {
    this.liveness?.pause();
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
    this.liveness?.resume();
  }

  close(): void {
    this.#stopListening();
    this.socket.close(WS_CLOSE_CODES.NORMAL);
  }
}
