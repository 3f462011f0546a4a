import {
  type Signal,
  ExecResponse,
  ProcessInfo,
  ProcessList,
  ProcessOutputResponse,
  ProcessStartResponse,
} from '@sbx/protocol';
import type { ExecResult, ProcessOutput } from './dataplane-types.js';
import { ExecStream, type Command, type CommandOptions, type ExecStreamOptions } from './exec-stream.js';
import { httpCall, httpJson, type CallOptions, type HttpEndpoint } from './http-client.js';
import { OutputFollow } from './output-follow.js';
import type { SocketContext } from './ws-channel.js';

export type { Command, CommandOptions } from './exec-stream.js';

export interface OutputOptions extends CallOptions {
  /** The newest N bytes of each stream (everything the agent still buffers when absent). */
  readonly tail?: number;
  /** One stream only; both by default. */
  readonly stream?: 'stdout' | 'stderr' | 'both';
  /** `true`: stream the output until the process exits (see OutputFollow). */
  readonly follow?: boolean;
}

/**
 * Runs programs: to completion (`run`), streamed (`stream`), or in the background
 * (`start`, then stdin/signal/output).
 */
export class ExecApi {
  constructor(
    private readonly endpoint: HttpEndpoint,
    private readonly sockets: SocketContext,
  ) {}

  /**
   * Runs a program over a WebSocket: output as it is written (iterate `stdout`/`stderr`,
   * or pass `onStdout`/`onStderr`), stdin by `write`/`closeStdin`, `kill`, `wait`. Resolves
   * once it runs. Needs the `process` capability (a SecurityError otherwise, not retried).
   */
  stream(command: Command, options: ExecStreamOptions = {}): Promise<ExecStream> {
    return ExecStream.start(this.sockets, command, options);
  }

  /** Runs to completion. Never retried after a transport failure (it may have run). */
  run(
    command: Command,
    options: CommandOptions & CallOptions & { readonly stdin?: string; readonly timeoutMs?: number } = {},
  ): Promise<ExecResult> {
    const body = {
      ...command,
      ...commandFields(options),
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
      ...(options.timeoutMs === undefined ? {} : { timeout_ms: options.timeoutMs }),
    };
    const call =
      options.timeoutMs === undefined ? options : { ...options, timeoutMs: options.timeoutMs + 10_000 };
    const request = {
      method: 'POST',
      path: 'v1/exec',
      body: { json: body },
      idempotent: false,
      what: 'exec',
    } as const;
    return httpJson(this.endpoint, request, (v) => ExecResponse.parse(v), call);
  }

  start(
    command: Command,
    options: CommandOptions & CallOptions & { readonly tag?: string } = {},
  ): Promise<{ process_id: string; pid: number | null }> {
    const body = {
      ...command,
      ...commandFields(options),
      ...(options.tag === undefined ? {} : { tag: options.tag }),
    };
    const request = {
      method: 'POST',
      path: 'v1/processes',
      body: { json: body },
      idempotent: false,
      what: 'start process',
    } as const;
    return httpJson(this.endpoint, request, (v) => ProcessStartResponse.parse(v), options);
  }

  get(processId: string, options: CallOptions = {}): Promise<ProcessInfo> {
    const request = {
      method: 'GET',
      path: processPath(processId),
      idempotent: true,
      what: 'inspect process',
    } as const;
    return httpJson(this.endpoint, request, (v) => ProcessInfo.parse(v), options);
  }

  list(options: CallOptions = {}): Promise<readonly ProcessInfo[]> {
    const request = {
      method: 'GET',
      path: 'v1/processes',
      idempotent: true,
      what: 'list processes',
    } as const;
    return httpJson(this.endpoint, request, (v) => ProcessList.parse(v).processes, options);
  }

  stdin(
    processId: string,
    data: string,
    options: CallOptions & { readonly eof?: boolean } = {},
  ): Promise<unknown> {
    const body = { json: { data, ...(options.eof === undefined ? {} : { eof: options.eof }) } };
    const request = {
      method: 'POST',
      path: processPath(processId, '/stdin'),
      body,
      idempotent: false,
      what: 'write stdin',
    } as const;
    return httpJson(this.endpoint, request, (v) => v, options);
  }

  signal(processId: string, signal: Signal, options: CallOptions = {}): Promise<ProcessInfo> {
    const request = {
      method: 'POST',
      path: processPath(processId, '/signal'),
      body: { json: { signal } },
      idempotent: true,
      what: 'signal process',
    } as const;
    return httpJson(this.endpoint, request, (v) => ProcessInfo.parse(v), options);
  }

  /**
   * What the process wrote (the agent's buffer, or its newest `tail` bytes). With
   * `follow: true`, an async iterable of the output as it is written, until the process exits.
   */
  output(processId: string, options: OutputOptions & { readonly follow: true }): OutputFollow;
  output(processId: string, options?: OutputOptions & { readonly follow?: false }): Promise<ProcessOutput>;
  output(processId: string, options: OutputOptions = {}): OutputFollow | Promise<ProcessOutput> {
    const request = {
      method: 'GET',
      path: processPath(processId, '/output'),
      query: {
        tail: options.tail === undefined ? undefined : String(options.tail),
        stream: options.stream,
        ...(options.follow === true ? { follow: 'true' } : {}),
      },
      idempotent: true,
      streamResponse: options.follow === true,
      what: 'read process output',
    } as const;
    if (options.follow === true)
      return new OutputFollow(() => httpCall(this.endpoint, request, options), options.signal);
    return httpJson(this.endpoint, request, (v) => ProcessOutputResponse.parse(v), options);
  }

  /** Kills the process if it runs and forgets it. */
  remove(processId: string, options: CallOptions = {}): Promise<ProcessInfo> {
    const request = {
      method: 'DELETE',
      path: processPath(processId),
      idempotent: true,
      what: 'remove process',
    } as const;
    return httpJson(this.endpoint, request, (v) => ProcessInfo.parse(v), options);
  }
}

function processPath(id: string, suffix = ''): string {
  return `v1/processes/${encodeURIComponent(id)}${suffix}`;
}

function commandFields(options: CommandOptions): CommandOptions {
  return {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.env === undefined ? {} : { env: options.env }),
  };
}
