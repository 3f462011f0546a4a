import {
  DEFAULT_EXECUTE_CODE_TIMEOUT_MS,
  ExecuteCodeResult,
  type ExecuteCodeLanguage,
  type Scope,
} from '@sbx/protocol';
import { httpJson, type CallOptions, type HttpEndpoint, type HttpRequest } from './http-client.js';

/** A snippet for `execute_code`: the code, its language (default python) and its time limit. */
export interface CodeToRun {
  readonly code: string;
  /** `python` (default), `javascript` or `bash`. */
  readonly language?: ExecuteCodeLanguage;
  /** The code's own time limit (default 30 000 ms, at most 300 000); past it, `exit_status: 'timeout'`. */
  readonly timeoutMs?: number;
}

/** Where the code runs: the sandbox of a thread, or of any scope (created when there is none). */
export type ExecuteCodeTarget =
  | { readonly threadId: string; readonly scope?: never }
  | { readonly scope: Scope; readonly threadId?: never };

/** `BrokerClient.executeCode`'s argument: a target and the code. */
export type ExecuteCodeCall = ExecuteCodeTarget & CodeToRun;

/**
 * What the broker needs beyond the code's own time limit: provisioning the sandbox on
 * first use, the agent's kill grace and the way back. A call's deadline covers them all.
 */
export const EXECUTE_CODE_MARGIN_MS = 60_000;

function codeBody(call: CodeToRun): Record<string, unknown> {
  return {
    code: call.code,
    ...(call.language === undefined ? {} : { language: call.language }),
    ...(call.timeoutMs === undefined ? {} : { timeout_ms: call.timeoutMs }),
  };
}

function targetBody(call: ExecuteCodeCall): Record<string, unknown> {
  // Both or neither is sent as given, so the broker's 400 names the mistake.
  return {
    ...(call.threadId === undefined ? {} : { thread_id: call.threadId }),
    ...(call.scope === undefined ? {} : { scope: call.scope }),
  };
}

/**
 * One `execute_code` call. The answer is 200 with an `ExecuteCodeResult` whenever the broker
 * accepted the call, whatever became of the code (an error exit, a timeout, a cap that fired:
 * `ok: false` and `exit_status`/`error` say which); refusals (400/401/403/404) throw the
 * SDK's typed errors. Never retried after it may have run (not idempotent); answers that
 * say "try again" before it ran (429, 503) are. The deadline defaults to the client's
 * timeout, or the code's time limit plus `EXECUTE_CODE_MARGIN_MS` when that is longer.
 */
export function postExecuteCode(
  endpoint: HttpEndpoint,
  path: string,
  body: Record<string, unknown>,
  call: CodeToRun,
  options: CallOptions,
): Promise<ExecuteCodeResult> {
  const request: HttpRequest = {
    method: 'POST',
    path,
    body: { json: body },
    idempotent: false,
    what: 'execute code',
  };
  const needed = (call.timeoutMs ?? DEFAULT_EXECUTE_CODE_TIMEOUT_MS) + EXECUTE_CODE_MARGIN_MS;
  const timeoutMs = options.timeoutMs ?? Math.max(endpoint.timeoutMs, needed);
  return httpJson(endpoint, request, (v) => ExecuteCodeResult.parse(v), { ...options, timeoutMs });
}

export function executeCodeBody(call: ExecuteCodeCall): Record<string, unknown> {
  return { ...targetBody(call), ...codeBody(call) };
}

export function sessionExecuteCodeBody(call: CodeToRun): Record<string, unknown> {
  return codeBody(call);
}

/** Re-exported from @sbx/protocol, where the MCP server takes it without loading the SDK. */
export { executeCodeHint } from '@sbx/protocol';
