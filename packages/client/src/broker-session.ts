import type { SessionResponse } from '@sbx/protocol';
import type { BrokerClient, NegotiateOptions, NegotiateTarget } from './broker-client.js';
import { RefreshingCredentials, type Credential } from './credentials.js';
import { SandboxClient, type SandboxClientOptions } from './sandbox-client.js';

export interface SessionOptions extends NegotiateOptions {
  /** Extend the lease every this many ms while the session is open (off when absent). */
  readonly heartbeatIntervalMs?: number;
  /** A background refresh or heartbeat failed (the next use of the token retries the refresh). */
  readonly onBackgroundError?: (err: unknown) => void;
}

function credentialOf(answer: { token: string; expires_at: string }): Credential {
  return { token: answer.token, expiresAt: new Date(answer.expires_at) };
}

/**
 * A negotiated session that keeps itself usable: its token is refreshed before it
 * expires, its lease optionally extended on a timer, and `await using` releases it.
 *
 *   await using session = await BrokerSession.ensure(broker, { thread_id: 'thr_1' });
 *   const sandbox = session.sandbox();
 */
export class BrokerSession implements AsyncDisposable {
  readonly credentials: RefreshingCredentials;
  #heartbeat: NodeJS.Timeout | undefined;
  #released = false;

  private constructor(
    readonly broker: BrokerClient,
    readonly response: SessionResponse,
    options: SessionOptions,
  ) {
    this.credentials = new RefreshingCredentials({
      initial: credentialOf(response),
      refresh: async () => credentialOf(await broker.refresh(response.session_id)),
      ...(options.onBackgroundError === undefined ? {} : { onError: options.onBackgroundError }),
    });
    if (options.heartbeatIntervalMs !== undefined) this.#startHeartbeat(options);
  }

  static async ensure(
    broker: BrokerClient,
    target: NegotiateTarget,
    options: SessionOptions = {},
  ): Promise<BrokerSession> {
    return new BrokerSession(broker, await broker.ensure(target, options), options);
  }

  static async get(
    broker: BrokerClient,
    target: NegotiateTarget,
    options: SessionOptions = {},
  ): Promise<BrokerSession> {
    return new BrokerSession(broker, await broker.get(target, options), options);
  }

  get sessionId(): string {
    return this.response.session_id;
  }

  /** The dataplane client of this session's sandbox, authenticated by this session's token. */
  sandbox(options: Omit<SandboxClientOptions, 'httpBaseUrl' | 'wsBaseUrl' | 'tokens'> = {}): SandboxClient {
    return new SandboxClient({
      ...options,
      httpBaseUrl: this.response.dataplane.http_base_url,
      wsBaseUrl: this.response.dataplane.ws_base_url,
      tokens: this.credentials,
    });
  }

  /** Stops the timers and releases the binding (once; later calls do nothing). */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#heartbeat);
    this.credentials.close();
    await this.broker.release(this.sessionId);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  #startHeartbeat(options: SessionOptions): void {
    this.#heartbeat = setInterval(() => {
      this.broker.heartbeat(this.sessionId).catch((err: unknown) => options.onBackgroundError?.(err));
    }, options.heartbeatIntervalMs);
    this.#heartbeat.unref();
  }
}
