import { randomUUID } from 'node:crypto';
import {
  GetBindingResponse,
  HeartbeatResponse,
  RefreshTokenResponse,
  SessionResponse,
  ThreadHeartbeatResponse,
  ThreadRefreshResponse,
  ThreadSandboxResponse,
  WhoamiResponse,
  type FullNegotiateBodyInput,
  type MvpNegotiateBody,
  type ExecuteCodeResult,
  type ThreadSandboxRequestInput,
} from '@sbx/protocol';
import { BadRequestError } from './errors.js';
import { readEnvDefaults } from './client-config.js';
import {
  executeCodeBody,
  postExecuteCode,
  sessionExecuteCodeBody,
  type CodeToRun,
  type ExecuteCodeCall,
} from './execute-code.js';
import { httpCall, httpJson, type CallOptions, type HttpEndpoint } from './http-client.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';

export interface BrokerClientOptions {
  /** The broker's base URL. Default: `SBX_BROKER_URL`. */
  readonly baseUrl?: string;
  /** API key or OIDC access token. Default: `SBX_API_KEY`. */
  readonly apiKey?: string;
  /**
   * Asked for the bearer credential at every request, instead of a fixed `apiKey`: a login
   * whose access token is refreshed (an OIDC device login) hands out the current one. A
   * rejection fails the call as it is (throw a SecurityError to keep it from being retried).
   */
  readonly bearer?: () => string | Promise<string>;
  /**
   * Per call, retries included (default 30 s; ensure and create NEGOTIATE_TIMEOUT_MS, 2 min);
   * every method also takes its own.
   */
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
}

/** MVP `{thread_id}` or full `{scope, actor?, requested_capabilities?, …}`, without `mode`. */
export type NegotiateTarget = Omit<MvpNegotiateBody, 'mode'> | Omit<FullNegotiateBodyInput, 'mode'>;

export interface NegotiateOptions extends CallOptions {
  /** Makes a retried ensure safe; default a fresh UUID per call (shared by its retries). */
  readonly idempotencyKey?: string;
}

function fixedBearer(apiKey: string | undefined): () => string {
  if (apiKey === undefined) {
    throw new BadRequestError('no API key: pass apiKey or bearer, or set SBX_API_KEY');
  }
  return () => apiKey;
}

const sessionPath = (id: string, suffix = ''): string =>
  `v1/sandbox/sessions/${encodeURIComponent(id)}${suffix}`;
const threadPath = (id: string, suffix = ''): string => `threads/${encodeURIComponent(id)}/sandbox${suffix}`;

/**
 * The broker's session and thread routes. Negotiation takes either request shape; the
 * answer is the broker's combined response, so MVP readers use `session_id`, `sandbox`,
 * `token`, `expires_at` and full readers `binding`, `dataplane`, `credentials`.
 */
/**
 * How long an ensure or create may take by default: as long as the broker lets a sandbox
 * provision (its `provisioningTimeoutMs`, 2 min), not the 30 s of other calls. A burst of
 * cold starts on a small host queues (bench/first-command: 100 at once take about a minute on
 * 2 cores), and each is still answered. A client `timeoutMs` set by hand applies as set.
 */
export const NEGOTIATE_TIMEOUT_MS = 120_000;

export class BrokerClient {
  readonly #endpoint: HttpEndpoint;
  readonly #negotiateTimeoutMs: number;

  constructor(options: BrokerClientOptions = {}) {
    const needsEnv =
      options.baseUrl === undefined || (options.apiKey === undefined && options.bearer === undefined);
    const env = needsEnv ? readEnvDefaults() : undefined;
    const baseUrl = options.baseUrl ?? env?.brokerUrl;
    if (baseUrl === undefined) {
      throw new BadRequestError('no broker URL: pass baseUrl or set SBX_BROKER_URL');
    }
    this.#endpoint = {
      baseUrl,
      bearer: options.bearer ?? fixedBearer(options.apiKey ?? env?.apiKey),
      retry: options.retry ?? DEFAULT_RETRY_POLICY,
      timeoutMs: options.timeoutMs ?? 30_000,
    };
    this.#negotiateTimeoutMs = options.timeoutMs ?? NEGOTIATE_TIMEOUT_MS;
  }

  /** Attach to the scope's sandbox, creating it when there is none. */
  ensure(target: NegotiateTarget, options: NegotiateOptions = {}): Promise<SessionResponse> {
    return this.#negotiate({ ...target, mode: 'ensure' }, options);
  }

  /** Attach to the scope's existing sandbox (MVP `get`, full `attach_only`); 404 when there is none. */
  get(target: NegotiateTarget, options: NegotiateOptions = {}): Promise<SessionResponse> {
    return this.#negotiate({ ...target, mode: 'get' }, options);
  }

  /** Create a sandbox for the scope; 409 when it already has one. */
  create(
    target: Omit<FullNegotiateBodyInput, 'mode'>,
    options: NegotiateOptions = {},
  ): Promise<SessionResponse> {
    return this.#negotiate({ ...target, mode: 'create_only' }, options);
  }

  /** Who the credential authenticates as (`GET /v1/whoami`): principal, tenant, caller scopes. */
  whoami(options: CallOptions = {}): Promise<WhoamiResponse> {
    const request = { method: 'GET', path: 'v1/whoami', idempotent: true, what: 'whoami' } as const;
    return httpJson(this.#endpoint, request, (v) => WhoamiResponse.parse(v), options);
  }

  /** The binding without credentials (`GET`). */
  inspect(sessionId: string, options: CallOptions = {}): Promise<GetBindingResponse> {
    const request = {
      method: 'GET',
      path: sessionPath(sessionId),
      idempotent: true,
      what: 'inspect session',
    } as const;
    return httpJson(this.#endpoint, request, (v) => GetBindingResponse.parse(v), options);
  }

  /**
   * A new token for the session; `mvp: true` uses the MVP `/refresh` route. `capabilities`
   * makes this token carry only those (within what the session holds): a `shell:ro` token
   * to watch a shell, say. More than the session holds is a CapabilityDeniedError.
   */
  refresh(
    sessionId: string,
    options: CallOptions & { readonly mvp?: boolean; readonly capabilities?: readonly string[] } = {},
  ): Promise<RefreshTokenResponse> {
    const suffix = options.mvp === true ? '/refresh' : '/refresh-token';
    const narrowed =
      options.capabilities === undefined ? {} : { requested_capabilities: [...options.capabilities] };
    const request = {
      method: 'POST',
      path: sessionPath(sessionId, suffix),
      body: { json: narrowed },
      idempotent: true,
      what: 'refresh session token',
    } as const;
    return httpJson(this.#endpoint, request, (v) => RefreshTokenResponse.parse(v), options);
  }

  heartbeat(sessionId: string, options: CallOptions = {}): Promise<HeartbeatResponse> {
    const request = {
      method: 'POST',
      path: sessionPath(sessionId, '/heartbeat'),
      body: { json: {} },
      idempotent: true,
      what: 'heartbeat',
    } as const;
    return httpJson(this.#endpoint, request, (v) => HeartbeatResponse.parse(v), options);
  }

  /** Releases the binding; the last binding of a sandbox destroys it. */
  async release(sessionId: string, options: CallOptions = {}): Promise<void> {
    const request = {
      method: 'DELETE',
      path: sessionPath(sessionId),
      idempotent: true,
      what: 'release session',
    } as const;
    await httpCall(this.#endpoint, request, options);
  }

  /**
   * Runs a snippet in the sandbox of a thread (or scope), creating it on first use: the
   * agent-facing `execute_code` tool (`POST /v1/execute_code`, caller scope `exec:sandbox`).
   * Resolves with the result also when the code failed or a cap fired (`ok: false`).
   */
  executeCode(call: ExecuteCodeCall, options: CallOptions = {}): Promise<ExecuteCodeResult> {
    return postExecuteCode(this.#endpoint, 'v1/execute_code', executeCodeBody(call), call, options);
  }

  /** `executeCode` in the sandbox of a session of this caller's (`…/sessions/{id}/execute_code`). */
  executeCodeInSession(
    sessionId: string,
    call: CodeToRun,
    options: CallOptions = {},
  ): Promise<ExecuteCodeResult> {
    const path = sessionPath(sessionId, '/execute_code');
    return postExecuteCode(this.#endpoint, path, sessionExecuteCodeBody(call), call, options);
  }

  /** Hybrid-seed thread routes: negotiate, refresh with proof of possession, heartbeat, release. */
  threadSandbox(
    threadId: string,
    body: ThreadSandboxRequestInput,
    options: NegotiateOptions = {},
  ): Promise<ThreadSandboxResponse> {
    const request = {
      method: 'POST',
      path: threadPath(threadId),
      body: { json: body },
      headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
      idempotent: true,
      what: 'negotiate thread sandbox',
    } as const;
    return httpJson(this.#endpoint, request, (v) => ThreadSandboxResponse.parse(v), options);
  }

  threadRefresh(
    threadId: string,
    body: { sandbox_id: string; current_token: string },
    options: CallOptions = {},
  ): Promise<ThreadRefreshResponse> {
    const request = {
      method: 'POST',
      path: threadPath(threadId, '/refresh'),
      body: { json: body },
      idempotent: true,
      what: 'refresh thread token',
    } as const;
    return httpJson(this.#endpoint, request, (v) => ThreadRefreshResponse.parse(v), options);
  }

  threadHeartbeat(
    threadId: string,
    sandboxId?: string,
    options: CallOptions = {},
  ): Promise<ThreadHeartbeatResponse> {
    const body = sandboxId === undefined ? {} : { sandbox_id: sandboxId };
    const request = {
      method: 'POST',
      path: threadPath(threadId, '/heartbeat'),
      body: { json: body },
      idempotent: true,
      what: 'thread heartbeat',
    } as const;
    return httpJson(this.#endpoint, request, (v) => ThreadHeartbeatResponse.parse(v), options);
  }

  async threadRelease(threadId: string, options: CallOptions = {}): Promise<void> {
    const request = {
      method: 'DELETE',
      path: threadPath(threadId),
      idempotent: true,
      what: 'release thread sandbox',
    } as const;
    await httpCall(this.#endpoint, request, options);
  }

  #negotiate(body: Record<string, unknown>, options: NegotiateOptions): Promise<SessionResponse> {
    const request = {
      method: 'POST',
      path: 'v1/sandbox/sessions',
      body: { json: body },
      headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
      idempotent: true,
      what: `negotiate session (${String(body['mode'])})`,
    } as const;
    const timeoutMs = options.timeoutMs ?? this.#negotiateTimeoutMs;
    return httpJson(this.#endpoint, request, (v) => SessionResponse.parse(v), { ...options, timeoutMs });
  }
}
