import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  executeCodeHint,
  EXECUTE_CODE_LANGUAGES,
  MAX_EXECUTE_CODE_CHARS,
  MAX_EXECUTE_CODE_TIMEOUT_MS,
  type ExecuteCodeResult,
} from '@sbx/protocol';
import { z } from 'zod';
import type { CallerEnvironments } from './environments.js';
import { guarded, toolResult } from './results.js';

/**
 * The result as the tool's answer: the object (with `hint` when the caller should act on it
 * in a particular way) as structured content and JSON text; `isError` unless the code ran
 * and exited 0, so a host that only looks at `isError` still notices a failed run.
 */
export function executeCodeAnswer(result: ExecuteCodeResult): CallToolResult {
  const hint = executeCodeHint(result);
  const answer = toolResult(hint === undefined ? { ...result } : { ...result, hint });
  return result.ok ? answer : { ...answer, isError: true };
}

/** `execute_code` through the broker, in the sandbox of the thread's session (docs/mcp.md#tools). */
export function registerCodeTools(
  server: McpServer,
  environments: CallerEnvironments,
  onInternal?: (err: unknown) => void,
): void {
  server.registerTool(
    'execute_code',
    {
      title: 'Execute code',
      description:
        'Run a snippet of python (default), javascript or bash in the sandbox of the thread and get ' +
        'ok, exit_status (ok, error, timeout, oom, cap_exceeded, provisioning), stdout, stderr, exit_code. ' +
        'Runs through the broker: the tenant caps and audits every call. When ok is false, read error and hint.',
      inputSchema: {
        thread_id: z
          .string()
          .min(1)
          .max(200)
          .optional()
          .describe('The thread; default: the environment acquired last by this caller'),
        code: z
          .string()
          .max(MAX_EXECUTE_CODE_CHARS)
          .describe('The source code to run, as a complete program'),
        language: z.enum(EXECUTE_CODE_LANGUAGES).optional().describe('python (default), javascript or bash'),
        timeout_ms: z
          .number()
          .int()
          .positive()
          .max(MAX_EXECUTE_CODE_TIMEOUT_MS)
          .optional()
          .describe('Time limit of the run in milliseconds (default 30000)'),
      },
    },
    ({ thread_id, code, language, timeout_ms }) =>
      guarded(async () => {
        const call = {
          code,
          ...(language === undefined ? {} : { language }),
          ...(timeout_ms === undefined ? {} : { timeoutMs: timeout_ms }),
        };
        const result = await environments.withSession(thread_id, (session) => session.executeCode(call));
        return executeCodeAnswer(result);
      }, onInternal),
  );
}
