// The agent-facing `execute_code` tool as a LangChain tool: a snippet of python, javascript
// or bash runs in the sandbox of the run's thread, through the broker (caps, audit, redaction),
// and the model reads the structured result as JSON.
import { tool, type DynamicStructuredTool, type ToolRunnableConfig } from '@langchain/core/tools';
import type { InteropZodObject } from '@langchain/core/utils/types';
import { executeCodeHint, type BrokerClient, type BrokerClientOptions, type CodeToRun } from '@sbx/client';
import {
  MvpSessionResponse,
  SessionExecuteCodeRequest,
  type ExecuteCodeLanguage,
  type ExecuteCodeResult,
} from '@sbx/protocol';
import { SbxSandboxError } from './errors.js';
import { lazyBroker } from './options.js';

export interface ExecuteCodeToolOptions {
  /** The broker, or how to reach it; default `SBX_BROKER_URL` and `SBX_API_KEY` (an agent's key with `exec:sandbox`). */
  readonly broker?: BrokerClient | BrokerClientOptions;
  /** Always this thread's sandbox. Absent: the run's `configurable.sandbox` session, else its `configurable.thread_id`. */
  readonly threadId?: string;
  /** The tool's name (default `execute_code`). */
  readonly name?: string;
  /** What the model is told the tool does (default: `EXECUTE_CODE_DESCRIPTION`). */
  readonly description?: string;
}

export const EXECUTE_CODE_TOOL_NAME = 'execute_code';

export const EXECUTE_CODE_DESCRIPTION =
  "Run a snippet of python (default), javascript or bash in this conversation's sandbox and get " +
  'its result as JSON: ok (true only when it exited 0), exit_status (ok, error, timeout, oom, ' +
  'cap_exceeded, provisioning), stdout, stderr, exit_code. Files the code writes stay in the ' +
  'sandbox for later calls. When ok is false, read error, hint and stderr before trying again.';

const shape = SessionExecuteCodeRequest.shape;

/** The tool's arguments, as the model gives them. */
export interface ExecuteCodeToolArgs {
  readonly code: string;
  readonly language?: ExecuteCodeLanguage;
  readonly timeout_ms?: number;
}

/** What `createExecuteCodeTool` makes: a structured tool whose output is `[json text, result]`. */
export type ExecuteCodeTool = DynamicStructuredTool<
  InteropZodObject,
  ExecuteCodeToolArgs,
  ExecuteCodeToolArgs,
  [string, ExecuteCodeResult]
>;

/** The tool's input: the wire body of `…/execute_code` with the broker's defaults left to the broker. */
const ExecuteCodeToolInput = SessionExecuteCodeRequest.extend({
  code: shape.code.describe('The source code to run, as a complete program'),
  language: shape.language.unwrap().optional().describe('python (default), javascript or bash'),
  timeout_ms: shape.timeout_ms
    .unwrap()
    .optional()
    .describe('Time limit of the run in milliseconds (default 30000, at most 300000)'),
});

/** What the model reads: the result, and for a call that did not run, what to do about it. */
export type ExecuteCodeToolView = ExecuteCodeResult & { readonly hint?: string };

/** The result as the model sees it: JSON, with `hint` when there is something to do. */
export function executeCodeToolText(result: ExecuteCodeResult): string {
  const hint = executeCodeHint(result);
  const view: ExecuteCodeToolView = hint === undefined ? result : { ...result, hint };
  return JSON.stringify(view, null, 2);
}

/** Where a call runs: the fixed thread, the run's pre-negotiated session, or the run's thread. */
function targetOf(
  options: ExecuteCodeToolOptions,
  config: ToolRunnableConfig | undefined,
): { threadId: string } | { sessionId: string } {
  if (options.threadId !== undefined) return { threadId: options.threadId };
  const configurable: Record<string, unknown> = config?.configurable ?? {};
  const session = MvpSessionResponse.safeParse(configurable['sandbox']);
  if (session.success) return { sessionId: session.data.session_id };
  const threadId = configurable['thread_id'];
  if (typeof threadId === 'string' && threadId !== '') return { threadId };
  throw new SbxSandboxError(
    'execute_code has no thread: pass threadId to createExecuteCodeTool or run the graph with configurable.thread_id',
    'NO_THREAD',
  );
}

/**
 * `execute_code` for LangChain and LangGraph agents (`createAgent`, `createDeepAgent`,
 * `createReactAgent`'s `tools`). Each call runs in the sandbox of the run's thread (created on
 * first use), shared with the deepagents backend `SbxSandbox` and with humans on that thread.
 * The content is the result as JSON (`executeCodeToolText`), the artifact the parsed result.
 * A refusal of the call itself (no `exec:sandbox`, a bad credential) is thrown as the SDK's
 * error, which LangChain's ToolNode hands to the model as an error message.
 */
export function createExecuteCodeTool(options: ExecuteCodeToolOptions = {}): ExecuteCodeTool {
  const broker = lazyBroker(options.broker);
  return tool(
    async (input, config: ToolRunnableConfig): Promise<[string, ExecuteCodeResult]> => {
      const call: CodeToRun = {
        code: input.code,
        ...(input.language === undefined ? {} : { language: input.language }),
        ...(input.timeout_ms === undefined ? {} : { timeoutMs: input.timeout_ms }),
      };
      const target = targetOf(options, config);
      const signal = config?.signal === undefined ? {} : { signal: config.signal };
      const result =
        'sessionId' in target
          ? await broker().executeCodeInSession(target.sessionId, call, signal)
          : await broker().executeCode({ threadId: target.threadId, ...call }, signal);
      return [executeCodeToolText(result), result];
    },
    {
      name: options.name ?? EXECUTE_CODE_TOOL_NAME,
      description: options.description ?? EXECUTE_CODE_DESCRIPTION,
      schema: ExecuteCodeToolInput,
      responseFormat: 'content_and_artifact',
    },
  );
}
