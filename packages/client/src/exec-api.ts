import type { Signal } from '@sbx/protocol';
import { asObject, type ExecResult, type ProcessInfo, type ProcessOutput } from './dataplane-types.js';
import { httpJson, type CallOptions, type HttpEndpoint } from './http-client.js';

export type Command =
  | { readonly argv: readonly string[]; readonly cmd?: never }
  | { readonly cmd: string; readonly argv?: never };

export interface CommandOptions {
  readonly cwd?: string;
  readonly env?: Record<string, string>;
}

/** Runs programs: to completion (`run`), or in the background (`start`, then stdin/signal/output). */
export class ExecApi {
  constructor(private readonly endpoint: HttpEndpoint) {}

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
    return httpJson(this.endpoint, request, (v) => asObject<ExecResult>(v), call);
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
    return httpJson(
      this.endpoint,
      request,
      (v) => asObject<{ process_id: string; pid: number | null }>(v),
      options,
    );
  }

  get(processId: string, options: CallOptions = {}): Promise<ProcessInfo> {
    const request = {
      method: 'GET',
      path: processPath(processId),
      idempotent: true,
      what: 'inspect process',
    } as const;
    return httpJson(this.endpoint, request, (v) => asObject<ProcessInfo>(v), options);
  }

  list(options: CallOptions = {}): Promise<readonly ProcessInfo[]> {
    const request = {
      method: 'GET',
      path: 'v1/processes',
      idempotent: true,
      what: 'list processes',
    } as const;
    return httpJson(
      this.endpoint,
      request,
      (v) => asObject<{ processes: ProcessInfo[] }>(v).processes,
      options,
    );
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
    return httpJson(this.endpoint, request, (v) => asObject<ProcessInfo>(v), options);
  }

  output(processId: string, options: CallOptions & { readonly tail?: number } = {}): Promise<ProcessOutput> {
    const query = { tail: options.tail === undefined ? undefined : String(options.tail) };
    const request = {
      method: 'GET',
      path: processPath(processId, '/output'),
      query,
      idempotent: true,
      what: 'read process output',
    } as const;
    return httpJson(this.endpoint, request, (v) => asObject<ProcessOutput>(v), options);
  }

  /** Kills the process if it runs and forgets it. */
  remove(processId: string, options: CallOptions = {}): Promise<ProcessInfo> {
    const request = {
      method: 'DELETE',
      path: processPath(processId),
      idempotent: true,
      what: 'remove process',
    } as const;
    return httpJson(this.endpoint, request, (v) => asObject<ProcessInfo>(v), options);
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
