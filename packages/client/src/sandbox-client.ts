import { SandboxInfo } from '@sbx/protocol';
import type { TokenSource } from './credentials.js';
import { ExecApi } from './exec-api.js';
import { FilesApi } from './files-api.js';
import { httpJson, type CallOptions, type HttpEndpoint } from './http-client.js';
import type { KeepAlive } from './keep-alive.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
import { Shell, type ShellOptions } from './shell.js';
import type { SocketContext } from './ws-channel.js';

export interface SandboxEndpoints {
  readonly httpBaseUrl: string;
  readonly wsBaseUrl: string;
}

export interface SandboxClientOptions extends SandboxEndpoints {
  /**
   * Where the agent is now, read at every request and connection; overrides the two URLs.
   * A `BrokerSession` passes its own, which follows a sandbox resumed at new addresses.
   */
  readonly endpoints?: () => SandboxEndpoints;
  /** The session's token; a `BrokerSession`'s credentials refresh themselves. */
  readonly tokens: TokenSource;
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
  /**
   * How shells, watches and streamed exec notice a connection that died without a close
   * (default DEFAULT_KEEP_ALIVE: a ping after 10 s of silence, the end 10 s later); `false`: never.
   */
  readonly keepAlive?: KeepAlive | false;
}

/**
 * One sandbox's dataplane: files (and watches), exec (run, streamed, background processes),
 * shells. Every path is a sandbox path, the same for all three: relative to the workspace
 * (`src/main.py`) or absolute as the sandbox's processes see it, anywhere in the sandbox
 * (`/workspace/src/main.py`, `/tmp/x`; `info()` says where the workspace is).
 */
export class SandboxClient {
  readonly files: FilesApi;
  readonly exec: ExecApi;
  readonly #options: SandboxClientOptions;
  readonly #endpoint: HttpEndpoint;

  constructor(options: SandboxClientOptions) {
    this.#options = options;
    const current = options.endpoints ?? (() => options);
    const endpoint: HttpEndpoint = {
      get baseUrl() {
        return current().httpBaseUrl;
      },
      bearer: () => options.tokens.fresh(),
      retry: options.retry ?? DEFAULT_RETRY_POLICY,
      timeoutMs: options.timeoutMs ?? 30_000,
    };
    this.#endpoint = endpoint;
    this.files = new FilesApi(endpoint, this.#socketContext());
    this.exec = new ExecApi(endpoint, this.#socketContext());
  }

  /**
   * `GET /v1/info` (any token of the sandbox): its id, where its processes see the
   * workspace (`workspace_path`, also their HOME and default cwd), and the agent's version.
   */
  info(options: CallOptions = {}): Promise<SandboxInfo> {
    const request = { method: 'GET', path: 'v1/info', idempotent: true, what: 'sandbox info' } as const;
    return httpJson(this.#endpoint, request, (v) => SandboxInfo.parse(v), options);
  }

  /** Opens a new PTY shell. */
  openShell(options: ShellOptions = {}): Promise<Shell> {
    return Shell.open(this.#socketContext(), options);
  }

  /** Reattaches to a shell by id (e.g. from another process); its scrollback arrives first. */
  attachShell(id: string, options: ShellOptions = {}): Promise<Shell> {
    return Shell.attach(this.#socketContext(), id, options);
  }

  #socketContext(): SocketContext {
    const options = this.#options;
    const current = options.endpoints ?? (() => options);
    return {
      get wsUrl() {
        return current().wsBaseUrl;
      },
      tokens: this.#options.tokens,
      retry: this.#options.retry ?? DEFAULT_RETRY_POLICY,
      timeoutMs: this.#options.timeoutMs ?? 30_000,
      ...(options.keepAlive === undefined ? {} : { keepAlive: options.keepAlive }),
    };
  }
}
