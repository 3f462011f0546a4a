import type { ExecuteCodeResult, HeartbeatResponse, SessionResponse } from '@sbx/protocol';
import type { BrokerClient, NegotiateOptions, NegotiateTarget } from './broker-client.js';
import type { CodeToRun } from './execute-code.js';
import type { CallOptions } from './http-client.js';
import { RefreshingCredentials, type Credential } from './credentials.js';
import { SandboxClient, type SandboxClientOptions, type SandboxEndpoints } from './sandbox-client.js';
import { workspacePathOf } from './workspace.js';

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
  #endpoints: SandboxEndpoints;
  #workspacePath: string;

  private constructor(
    readonly broker: BrokerClient,
    readonly response: SessionResponse,
    options: SessionOptions,
  ) {
    this.#endpoints = {
      httpBaseUrl: response.dataplane.http_base_url,
      wsBaseUrl: response.dataplane.ws_base_url,
    };
    this.#workspacePath = workspacePathOf(response);
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

  /** Where the sandbox's agent is now (a heartbeat that resumed the sandbox may have moved it). */
  get endpoints(): SandboxEndpoints {
    return this.#endpoints;
  }

  /**
   * Where the sandbox's processes see their workspace (also their HOME and default cwd):
   * `/workspace` under bubblewrap, the host path with `LOCAL_ISOLATION=none`; `/workspace`
   * when the broker's answer leaves it out (an older server). File paths are sandbox paths:
   * relative ones (`src/main.py`) are relative to it, absolute ones are the sandbox's own
   * (`/tmp/x` too), and answers give the absolute form (`${workspacePath}/src/main.py`).
   */
  get workspacePath(): string {
    return this.#workspacePath;
  }

  /**
   * The dataplane client of this session's sandbox, authenticated by this session's token.
   * It follows the session's endpoints, so it keeps working after a heartbeat resumed the sandbox.
   */
  sandbox(
    options: Omit<SandboxClientOptions, 'httpBaseUrl' | 'wsBaseUrl' | 'tokens' | 'endpoints'> = {},
  ): SandboxClient {
    return new SandboxClient({
      ...options,
      ...this.#endpoints,
      endpoints: () => this.#endpoints,
      tokens: this.credentials,
    });
  }

  /**
   * Runs a snippet in this session's sandbox through the broker (`execute_code`: caller
   * scope `exec:sandbox`, the tenant's caps, one audited invocation per call). Resolves
   * with the result also when the code failed or a cap fired (`ok: false`).
   */
  executeCode(call: CodeToRun, options: CallOptions = {}): Promise<ExecuteCodeResult> {
    return this.broker.executeCodeInSession(this.sessionId, call, options);
  }

  /** Extends the lease (resuming an idle or suspended sandbox) and adopts its current endpoints. */
  async heartbeat(): Promise<HeartbeatResponse> {
    const beat = await this.broker.heartbeat(this.sessionId);
    if (beat.dataplane !== undefined) {
      this.#endpoints = { httpBaseUrl: beat.dataplane.http_base_url, wsBaseUrl: beat.dataplane.ws_base_url };
      if (beat.dataplane.workspace_path !== undefined) this.#workspacePath = beat.dataplane.workspace_path;
    }
    return beat;
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
      this.heartbeat().catch((err: unknown) => options.onBackgroundError?.(err));
    }, options.heartbeatIntervalMs);
    this.#heartbeat.unref();
  }
}
