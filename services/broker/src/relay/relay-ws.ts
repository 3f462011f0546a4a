import { WebSocket, type RawData } from 'ws';
import { ErrorFrame, WS_CLOSE_CODES, type SbxError } from '@sbx/protocol';
import {
  DEFAULT_HIGH_WATER_BYTES,
  DEFAULT_TIMEOUT_MS,
  joinUrl,
  type HeldFrame,
  type RelayTarget,
  type RelayWsOptions,
  type WsRelayOutcome,
} from './relay-types.js';
import { authFrameToken } from './ws-auth-frame.js';
import { agentCodeFor, callerCodeFor, reasonOf, TRY_AGAIN_LATER } from './ws-close-map.js';
import { bufferOf, WsPump } from './ws-pump.js';

/**
 * WebSocket: `client` is an open socket whose first message (the caller's credential) the
 * route has consumed. Opens `${target.wsBaseUrl}${agentPath}`, sends `{type:'auth', token}`
 * first, then passes every message both ways in order, with backpressure (RelayWsOptions).
 * Resolves once both sockets have closed; never rejects (but for a relative `agentPath`).
 */
export async function relayWebSocket(
  client: WebSocket,
  target: RelayTarget,
  agentPath: string,
  options: RelayWsOptions = {},
): Promise<WsRelayOutcome> {
  const url = joinUrl(target.wsBaseUrl, agentPath);
  return new Promise((resolve) => new WsBridge(client, options, resolve).start(url, target.token));
}

class WsBridge {
  readonly #started = Date.now();
  #upstream: WebSocket | undefined;
  #toClient: WsPump | undefined;
  #toAgent: WsPump | undefined;
  #queue: HeldFrame[] = [];
  #opened = false;
  #clientClosed = false;
  #agentClosed = false;
  #refusedStatus: number | undefined;
  #firstFrame: RelayWsOptions['firstFrame'];
  /** The first frame was refused: the caller is being closed and nothing more is forwarded. */
  #refused = false;
  /** The agent's last text message: its `error` frame, when it closes refusing the token. */
  #lastAgentText: Buffer | undefined;
  #outcome: { -readonly [K in keyof WsRelayOutcome]?: WsRelayOutcome[K] } = {};

  constructor(
    private readonly client: WebSocket,
    private readonly options: RelayWsOptions,
    private readonly resolve: (outcome: WsRelayOutcome) => void,
  ) {}

  start(url: URL, token: string): void {
    const { client, options } = this;
    const upstream = new WebSocket(url, {
      handshakeTimeout: options.connectTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      // One hop inside the deployment: compressing it again costs CPU and buys nothing.
      perMessageDeflate: false,
      ...(options.maxPayloadBytes === undefined ? {} : { maxPayload: options.maxPayloadBytes }),
    });
    this.#upstream = upstream;
    const highWater = options.highWaterBytes ?? DEFAULT_HIGH_WATER_BYTES;
    this.#toClient = new WsPump(upstream, client, highWater, (p) => options.onBackpressure?.('toClient', p));
    this.#toAgent = new WsPump(client, upstream, highWater, (p) => options.onBackpressure?.('toAgent', p));
    this.#queue = [...(options.pending ?? [])];
    this.#firstFrame = options.firstFrame;
    // Until the agent has the token, the caller's messages wait in its socket, not here.
    client.pause();
    client.on('message', (data: RawData, isBinary: boolean) => this.#fromClient(data, isBinary));
    client.on('close', (code: number, reason: Buffer) => this.#onClientClose(code, reasonOf(reason)));
    client.on('error', () => undefined); // `close` follows
    upstream.on('open', () => this.#onOpen(token));
    upstream.on('message', (data: RawData, isBinary: boolean) => {
      const buffer = bufferOf(data);
      this.#lastAgentText = isBinary ? undefined : buffer;
      this.#toClient?.forward(buffer, isBinary);
    });
    upstream.on('unexpected-response', (_request, response) => {
      this.#refusedStatus = response.statusCode;
      response.resume();
      // Aborts the handshake the way ws itself would, which emits `error` and `close`.
      upstream.terminate();
    });
    upstream.on('error', () => undefined); // `close` follows, with 1006 when nothing was said
    upstream.on('close', (code: number, reason: Buffer) => this.#onAgentClose(code, reasonOf(reason)));
    if (client.readyState !== WebSocket.OPEN) this.#onClientClose(WS_CLOSE_CODES.INTERNAL_ERROR, '');
  }

  #onOpen(token: string): void {
    this.#opened = true;
    this.#upstream?.send(JSON.stringify({ type: 'auth', token }));
    for (const frame of this.#queue) this.#fromClient(frame.data, frame.isBinary);
    this.#queue = [];
    if (this.#toAgent?.paused !== true) this.client.resume();
  }

  #fromClient(data: RawData, isBinary: boolean): void {
    if (!this.#opened) {
      this.#queue.push({ data, isBinary });
      return;
    }
    if (this.#refused) return;
    const buffer = bufferOf(data);
    const auth = isBinary ? undefined : authFrameToken(buffer);
    if (auth !== undefined) this.#reauthenticate(auth.token).catch(() => undefined);
    else if (this.#firstFrame === undefined) this.#toAgent?.forward(buffer, isBinary);
    else this.#forwardFirst(this.#firstFrame(buffer, isBinary));
  }

  #forwardFirst(frame: Buffer | SbxError): void {
    this.#firstFrame = undefined;
    if (Buffer.isBuffer(frame)) {
      this.#toAgent?.forward(frame, false);
      return;
    }
    this.#refused = true;
    if (this.client.readyState === WebSocket.OPEN)
      this.client.send(JSON.stringify({ type: 'error', ...frame.toEnvelope() }));
    this.#closeClient('relay', WS_CLOSE_CODES.POLICY_VIOLATION, reasonOf(frame.message));
  }

  /** The caller's credential stays here; the agent gets a fresh token from the hook, if any. */
  async #reauthenticate(callerToken: unknown): Promise<void> {
    const fresh = await this.options.onClientAuth?.(callerToken);
    if (fresh !== undefined && this.#upstream?.readyState === WebSocket.OPEN)
      this.#upstream.send(JSON.stringify({ type: 'auth', token: fresh }));
  }

  #onAgentClose(code: number, reason: string): void {
    this.#agentClosed = true;
    if (code === WS_CLOSE_CODES.POLICY_VIOLATION && refusesToken(this.#lastAgentText))
      this.#outcome.tokenRefused = true;
    // The caller's close reply must be read, whether backpressure or a connect that never
    // completed had stopped the relay reading it; what else it sends now is dropped.
    this.#toAgent?.release();
    this.client.resume();
    if (this.#clientClosed) {
      if (this.#opened) this.#outcome.agentCloseCode = code;
    } else if (!this.#opened) {
      const overloaded = this.#refusedStatus === 503 || this.#refusedStatus === 429;
      this.#outcome.failure = overloaded ? 'overloaded' : 'unreachable';
      this.#closeClient(
        'relay',
        overloaded ? TRY_AGAIN_LATER : WS_CLOSE_CODES.INTERNAL_ERROR,
        overloaded ? 'the sandbox agent is busy; try again later' : 'the sandbox agent is unreachable',
      );
    } else {
      this.#outcome.agentCloseCode = code;
      this.#closeClient('agent', callerCodeFor(code), reason);
    }
    this.#finishIfDone();
  }

  #closeClient(by: WsRelayOutcome['closedBy'], code: number, reason: string): void {
    this.#outcome = { ...this.#outcome, closedBy: by, closeCode: code, closeReason: reason };
    // Queued behind every message already sent, so the caller reads all output first.
    if (this.client.readyState === WebSocket.OPEN) this.client.close(code, reason);
  }

  #onClientClose(code: number, reason: string): void {
    if (this.#clientClosed) return;
    this.#clientClosed = true;
    this.#outcome.closedBy ??= 'client';
    this.#outcome.closeCode ??= code;
    this.#outcome.closeReason ??= reason;
    this.#toClient?.release();
    const upstream = this.#upstream;
    if (upstream?.readyState === WebSocket.CONNECTING) upstream.terminate();
    else if (upstream?.readyState === WebSocket.OPEN) upstream.close(agentCodeFor(code), reason);
    this.#finishIfDone();
  }

  #finishIfDone(): void {
    if (!this.#clientClosed || !this.#agentClosed) return;
    const o = this.#outcome;
    this.resolve({
      kind: 'ws',
      closeCode: o.closeCode ?? WS_CLOSE_CODES.INTERNAL_ERROR,
      closeReason: o.closeReason ?? '',
      ...(o.agentCloseCode === undefined ? {} : { agentCloseCode: o.agentCloseCode }),
      closedBy: o.closedBy ?? 'client',
      bytesIn: this.#toAgent?.bytes ?? 0,
      messagesIn: this.#toAgent?.messages ?? 0,
      bytesOut: this.#toClient?.bytes ?? 0,
      messagesOut: this.#toClient?.messages ?? 0,
      peakBufferedToClient: this.#toClient?.peakBuffered ?? 0,
      peakBufferedToAgent: this.#toAgent?.peakBuffered ?? 0,
      durationMs: Date.now() - this.#started,
      ...(o.failure === undefined ? {} : { failure: o.failure }),
      ...(o.tokenRefused === true ? { tokenRefused: true } : {}),
    });
  }
}

/** The agent's `error` frame `UNAUTHENTICATED`, as it refuses a token. */
function refusesToken(text: Buffer | undefined): boolean {
  if (text === undefined || text.length > 4096) return false;
  try {
    const frame = ErrorFrame.safeParse(JSON.parse(text.toString('utf8')));
    return frame.success && frame.data.error.code === 'UNAUTHENTICATED';
  } catch {
    return false;
  }
}
