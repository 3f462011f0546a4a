import {
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream';
import { gatewayError, RelayTimeout, requestIdOf, sendEnvelope } from './relay-errors.js';
import { downstreamResponseHeaders, upstreamRequestHeaders } from './relay-headers.js';
import {
  DEFAULT_TIMEOUT_MS,
  joinUrl,
  type HttpRelayOutcome,
  type RelayHttpOptions,
  type RelayTarget,
} from './relay-types.js';

type Failure = NonNullable<HttpRelayOutcome['failure']>;

/**
 * HTTP: streams `req` to `${target.httpBaseUrl}${agentPath}` (`agentPath` starts with `/` and
 * carries the query string) and the agent's answer back to `res`, both with backpressure and
 * neither ever buffered whole. The route must not have read the body (mount no body parser
 * before it). Resolves once `res` has closed, never rejects (but for a relative `agentPath`).
 */
export async function relayHttp(
  req: IncomingMessage,
  res: ServerResponse,
  target: RelayTarget,
  agentPath: string,
  options: RelayHttpOptions = {},
): Promise<HttpRelayOutcome> {
  const url = joinUrl(target.httpBaseUrl, agentPath);
  return new Promise((resolve) => new HttpExchange(req, res, options, resolve).start(url, target.token));
}

/** One relayed request; its fields are the counts the outcome reports. */
class HttpExchange {
  readonly #started = Date.now();
  #upstream: ClientRequest | undefined;
  #response: IncomingMessage | undefined;
  #timer: NodeJS.Timeout | undefined;
  #bytesIn = 0;
  #bytesOut = 0;
  #failure: Failure | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly options: RelayHttpOptions,
    private readonly resolve: (outcome: HttpRelayOutcome) => void,
  ) {}

  start(url: URL, token: string): void {
    const brokerId = requestIdOf(this.res);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const upstream = send(url, {
      method: this.req.method ?? 'GET',
      headers: upstreamRequestHeaders(this.req.headers, token, brokerId),
      ...(this.options.agent === undefined ? {} : { agent: this.options.agent }),
    });
    this.#upstream = upstream;
    upstream.on('response', (response) => this.#onResponse(response));
    upstream.on('error', (err) => this.#onUpstreamError(err));
    this.#watchTimeouts(upstream);
    this.res.on('close', () => this.#onClientClose());
    this.req.on('data', (chunk: Buffer) => (this.#bytesIn += chunk.length));
    // A caller that breaks off its upload must not leave a half-written request open upstream.
    this.req.on('error', () => this.#abort('client_gone'));
    this.req.pipe(upstream);
  }

  /**
   * Armed while connecting and again from the end of the request body until the response
   * headers; never while the body streams (a slow 500 MiB upload is not a timeout).
   */
  #watchTimeouts(upstream: ClientRequest): void {
    let connected = false;
    let bodySent = false;
    const arm = (): void => {
      clearTimeout(this.#timer);
      const ms = this.options.headersTimeoutMs ?? DEFAULT_TIMEOUT_MS;
      this.#timer = setTimeout(() => upstream.destroy(new RelayTimeout()), ms);
    };
    arm();
    upstream.on('socket', (socket) => {
      const onConnect = (): void => {
        connected = true;
        if (!bodySent) clearTimeout(this.#timer);
      };
      if (socket.connecting) socket.once('connect', onConnect);
      else onConnect();
    });
    upstream.on('finish', () => {
      bodySent = true;
      if (connected) arm();
    });
  }

  #onResponse(response: IncomingMessage): void {
    clearTimeout(this.#timer);
    this.#response = response;
    if (this.res.destroyed) {
      response.destroy();
      return;
    }
    this.res.statusCode = response.statusCode ?? 502;
    for (const [name, value] of Object.entries(
      downstreamResponseHeaders(response.headers, requestIdOf(this.res)),
    )) {
      if (value !== undefined) this.res.setHeader(name, value);
    }
    response.on('data', (chunk: Buffer) => (this.#bytesOut += chunk.length));
    // On an error pipeline destroys `res`, and with it the caller's connection: after the
    // headers there is no other way to tell the caller that the body is incomplete.
    pipeline(response, this.res, () => undefined);
  }

  #onUpstreamError(err: Error): void {
    clearTimeout(this.#timer);
    this.req.unpipe(this.#upstream);
    if (this.#response !== undefined || this.#failure !== undefined) return;
    if (this.res.headersSent || this.res.destroyed) {
      this.res.destroy();
      return;
    }
    const gateway = gatewayError(err);
    this.#failure = gateway.failure;
    sendEnvelope(this.res, gateway, !this.req.complete);
  }

  #abort(failure: Failure): void {
    this.#failure ??= failure;
    clearTimeout(this.#timer);
    this.#upstream?.destroy();
    this.#response?.destroy();
  }

  #onClientClose(): void {
    // `close` follows a completed response too; an unfinished one either broke off upstream
    // (the agent's response errored, and pipeline destroyed `res`) or the caller left.
    if (!this.res.writableFinished) {
      const broke = this.#response !== undefined && this.#response.errored !== null;
      this.#abort(broke ? 'upstream_broken' : 'client_gone');
    }
    clearTimeout(this.#timer);
    this.resolve({
      kind: 'http',
      status: this.res.headersSent ? this.res.statusCode : 0,
      bytesIn: this.#bytesIn,
      bytesOut: this.#bytesOut,
      durationMs: Date.now() - this.#started,
      ...(this.#failure === undefined ? {} : { failure: this.#failure }),
    });
  }
}
