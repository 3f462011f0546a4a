import type { Duplex } from 'node:stream';
import type { WebSocket, RawData } from 'ws';
import {
  hasScope,
  parseClientFrame,
  SbxError,
  toTimestamp,
  WS_CLOSE_CODES,
  type CapabilityScope,
  type ServerFrame,
  type ServerFrameFor,
  type WsEndpoint,
  wsCloseReason,
} from '@sbx/protocol';
import { TokenError, type VerifiedCapability } from '@sbx/tokens';
import type { WsHubOptions } from './ws-hub.js';
import { legacyRejection } from './close-reasons.js';
import { tickCorker } from './tick-corker.js';
import type { EndpointFrame, EndpointHandler, WsRoute, WsSession } from './ws-session.js';

type Phase = 'awaiting_auth' | 'open' | 'closed';

function textOf(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8');
}

/** One WebSocket through its life: authentication, frame parsing, token expiry, keep-alive. */
export class WsConnection<E extends WsEndpoint> implements WsSession<E> {
  #phase: Phase = 'awaiting_auth';
  #capability: VerifiedCapability | undefined;
  /** The token `#capability` came from, re-checked when the revocation list changes. */
  #token: string | undefined;
  #handler: EndpointHandler<E> | undefined;
  #authTimer: NodeJS.Timeout | undefined;
  #expiryTimer: NodeJS.Timeout | undefined;
  #alive = true;
  /** Frames that arrived while a token was with the broker (opaque tokens, D20), handled in order after. */
  #queue: Promise<void> | undefined;
  readonly #cork: () => void;

  /** `stream`: the upgraded HTTP connection that `socket` writes to. */
  constructor(
    readonly socket: WebSocket,
    private readonly route: WsRoute<E>,
    readonly url: URL,
    private readonly options: WsHubOptions,
    stream: Duplex,
  ) {
    this.#cork = tickCorker(stream);
  }

  get capability(): VerifiedCapability {
    if (this.#capability === undefined) throw new SbxError('INTERNAL', 'session used before authentication');
    return this.#capability;
  }

  get bufferedAmount(): number {
    return this.socket.bufferedAmount;
  }

  /** Not yet authenticated (the hub caps how many such sockets it holds). */
  get awaitingAuth(): boolean {
    return this.#phase === 'awaiting_auth';
  }

  get isOpen(): boolean {
    return this.#phase === 'open' && this.socket.readyState === this.socket.OPEN;
  }

  has(scope: CapabilityScope): boolean {
    return this.#capability !== undefined && hasScope(this.#capability.scopes, scope);
  }

  start(): void {
    // Without an error listener a protocol error (e.g. a frame over maxPayload) kills the process.
    this.socket.on('error', () => this.#teardown(WS_CLOSE_CODES.INTERNAL_ERROR));
    this.socket.on('pong', () => (this.#alive = true));
    this.socket.on('close', (code: number) => this.#teardown(code));
    this.socket.on('message', (data: RawData, isBinary: boolean) => this.#receive(data, isBinary));
    if (this.route.auth === 'query') {
      this.#authenticateFromQuery();
      return;
    }
    this.#authTimer = setTimeout(
      () => this.#reject(WS_CLOSE_CODES.POLICY_VIOLATION, 'authentication timeout'),
      this.options.authTimeoutMs,
    );
  }

  send(frame: ServerFrameFor<E>, onWritten?: (err?: Error) => void): void {
    if (this.socket.readyState !== this.socket.OPEN) {
      onWritten?.(new Error('socket is closed'));
      return;
    }
    this.socket.send(JSON.stringify(frame), onWritten);
  }

  coalesceWrites(): void {
    this.#cork();
  }

  sendError(error: SbxError): void {
    this.#sendFrame({ type: 'error', ...error.toEnvelope() });
  }

  /** Frames every endpoint speaks (auth_ok, pong, error), sent without the endpoint's type. */
  #sendFrame(frame: ServerFrame): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(frame));
  }

  close(code: number, reason: string): void {
    if (this.#phase === 'closed') return;
    this.#phase = 'closed';
    this.socket.close(code, wsCloseReason(reason));
  }

  /** Called by the hub after a revocation: a socket whose token no longer passes closes 1008. */
  recheck(): void {
    if (this.#phase !== 'open' || this.#token === undefined) return;
    void this.#verify(
      this.#token,
      () => {},
      (error) => this.#reject(WS_CLOSE_CODES.POLICY_VIOLATION, error.message, error),
    );
  }

  #receive(data: RawData, isBinary: boolean): void {
    const run = (): void | Promise<void> => this.#onMessage(data, isBinary);
    const pending = this.#queue === undefined ? run() : this.#queue.then(run);
    if (pending === undefined) return;
    const queued: Promise<void> = pending.then(() => {
      if (this.#queue === queued) this.#queue = undefined;
      return undefined;
    });
    this.#queue = queued;
  }

  /** Called by the hub's keep-alive sweep: a peer silent since the last sweep is dropped. */
  checkAlive(): void {
    if (!this.#alive) {
      this.socket.terminate();
      return;
    }
    this.#alive = false;
    if (this.socket.readyState === this.socket.OPEN) this.socket.ping();
  }

  #reject(code: number, reason: string, error?: SbxError): void {
    if (error !== undefined) this.sendError(error);
    this.close(code, reason);
  }

  #onMessage(data: RawData, isBinary: boolean): void | Promise<void> {
    if (this.#phase === 'closed') return;
    this.#alive = true;
    if (isBinary) {
      this.#reject(
        WS_CLOSE_CODES.POLICY_VIOLATION,
        'binary frames are not accepted',
        new SbxError('BAD_REQUEST', 'frames must be JSON text'),
      );
      return;
    }
    const text = textOf(data);
    if (this.route.rawFrames === true && this.#phase === 'open') {
      this.#run(() => this.#handler?.onText?.(text));
      return;
    }
    const parsed = parseClientFrame(this.route.endpoint, text, { maxBytes: this.options.maxFrameBytes });
    if (!parsed.ok) {
      this.sendError(
        new SbxError(parsed.error.code, parsed.error.message, { details: parsed.error.details }),
      );
      this.close(parsed.close_code, parsed.message);
      return;
    }
    const frame = parsed.frame;
    if (frame.type === 'auth') return this.#authenticate(frame.token);
    if (this.#phase !== 'open') {
      this.#reject(
        WS_CLOSE_CODES.POLICY_VIOLATION,
        'first frame must be auth',
        new SbxError('UNAUTHENTICATED', 'send {"type":"auth","token":…} first'),
      );
      return;
    }
    if (frame.type === 'ping') {
      this.#sendFrame({ type: 'pong', ...(frame.id === undefined ? {} : { id: frame.id }) });
      return;
    }
    // oxlint-disable-next-line typescript/no-unsafe-type-assertion -- auth and ping were handled above; TS cannot narrow a generic union by its discriminant
    const endpointFrame = frame as EndpointFrame<E>;
    this.#run(() => this.#handler?.onFrame(endpointFrame));
  }

  #run(call: () => void | Promise<void> | undefined): void {
    try {
      const pending = call();
      if (pending instanceof Promise) pending.catch((err: unknown) => this.#onHandlerError(err));
    } catch (err) {
      this.#onHandlerError(err);
    }
  }

  #onHandlerError(err: unknown): void {
    const error = SbxError.from(err);
    if (error.code === 'INTERNAL')
      this.options.logger.error({ err: error.cause ?? error, route: this.url.pathname }, 'ws handler failed');
    this.sendError(error);
  }

  /** Calls `ok` with the token's capability if it grants the route, else `refused`; at once when it can. */
  #verify(
    token: string,
    ok: (capability: VerifiedCapability) => void,
    refused: (error: SbxError) => void,
  ): void | Promise<void> {
    const checked = (capability: VerifiedCapability): void => {
      if (this.#phase === 'closed') return;
      if (!this.route.anyOf.some((scope) => hasScope(capability.scopes, scope))) {
        refused(new TokenError('insufficient_scope', `token grants none of ${this.route.anyOf.join(', ')}`));
        return;
      }
      ok(capability);
    };
    const failed = (err: unknown): void => {
      if (this.#phase !== 'closed') refused(SbxError.from(err));
    };
    let answer: VerifiedCapability | Promise<VerifiedCapability>;
    try {
      answer = this.options.authenticator.authenticate(token);
    } catch (err) {
      failed(err);
      return undefined;
    }
    return answer instanceof Promise ? answer.then(checked, failed) : checked(answer);
  }

  #authenticate(token: string): void | Promise<void> {
    return this.#verify(
      token,
      (capability) => {
        // auth_ok goes out before the endpoint opens, so it is always the first frame a client reads.
        this.#sendFrame({
          type: 'auth_ok',
          expires_at: toTimestamp(capability.expiresAt),
          ...(capability.claims.session_id === undefined ? {} : { session_id: capability.claims.session_id }),
        });
        this.#accept(capability, token);
      },
      (error) => this.#reject(WS_CLOSE_CODES.POLICY_VIOLATION, error.message, error),
    );
  }

  #authenticateFromQuery(): void {
    const token = this.url.searchParams.get('token');
    const refused = (err: unknown): void => this.close(WS_CLOSE_CODES.POLICY_VIOLATION, legacyRejection(err));
    if (token === null || token === '') {
      refused(new TokenError('missing', 'no token was presented'));
      return;
    }
    void this.#verify(token, (capability) => this.#accept(capability, token), refused);
  }

  /** First authentication opens the endpoint; a later one extends the connection's life. */
  #accept(capability: VerifiedCapability, token: string): void {
    clearTimeout(this.#authTimer);
    clearTimeout(this.#expiryTimer);
    this.#capability = capability;
    this.#token = token;
    const remaining = Math.max(0, capability.expiresAt.getTime() - this.options.now());
    this.#expiryTimer = setTimeout(
      () => this.#reject(WS_CLOSE_CODES.TOKEN_EXPIRED, 'token expired'),
      Math.min(remaining, 2 ** 31 - 1),
    );
    if (this.#phase === 'awaiting_auth') {
      this.#phase = 'open';
      this.#handler = this.route.open(this);
    }
  }

  #teardown(code: number): void {
    clearTimeout(this.#authTimer);
    clearTimeout(this.#expiryTimer);
    const handler = this.#handler;
    this.#handler = undefined;
    this.#phase = 'closed';
    handler?.onClose?.(code);
  }
}
