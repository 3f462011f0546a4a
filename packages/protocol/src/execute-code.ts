import { z } from 'zod';
import { Id, Timestamp } from './primitives.js';
import { Scope } from './sessions.js';

/**
 * The agent-facing `execute_code` tool (docs/execute-code.md):
 *
 *   POST /v1/execute_code                                {thread_id | scope, code, language, timeout_ms?}
 *   POST /v1/sandbox/sessions/{session_id}/execute_code  {code, language, timeout_ms?}
 *
 * Both answer 200 with an `ExecuteCodeResult` whenever the call was accepted and
 * audited, whatever became of the code: the tool's outcome is in the body, so an
 * agent reads one shape. Bad requests and callers are refused with the error envelope.
 */

export const EXECUTE_CODE_LANGUAGES = ['python', 'javascript', 'bash'] as const;
export const ExecuteCodeLanguage = z.enum(EXECUTE_CODE_LANGUAGES);
export type ExecuteCodeLanguage = z.infer<typeof ExecuteCodeLanguage>;

/** One MiB of source: code, not data (data belongs in files). */
export const MAX_EXECUTE_CODE_CHARS = 1024 * 1024;
export const MAX_EXECUTE_CODE_TIMEOUT_MS = 300_000;
export const DEFAULT_EXECUTE_CODE_TIMEOUT_MS = 30_000;

const codeFields = {
  code: z
    .string()
    .max(MAX_EXECUTE_CODE_CHARS, { message: `must be at most ${MAX_EXECUTE_CODE_CHARS} characters` }),
  language: ExecuteCodeLanguage.default('python'),
  timeout_ms: z
    .number()
    .int({ message: 'must be a whole number of milliseconds' })
    .positive({ message: 'must be a positive number of milliseconds' })
    .max(MAX_EXECUTE_CODE_TIMEOUT_MS, { message: `must be at most ${MAX_EXECUTE_CODE_TIMEOUT_MS} ms` })
    .default(DEFAULT_EXECUTE_CODE_TIMEOUT_MS),
};

export const SessionExecuteCodeRequest = z.strictObject(codeFields);
export type SessionExecuteCodeRequest = z.infer<typeof SessionExecuteCodeRequest>;

export const ExecuteCodeRequest = z
  .strictObject({ thread_id: Id.optional(), scope: Scope.optional(), ...codeFields })
  .refine((body) => (body.thread_id === undefined) !== (body.scope === undefined), {
    message: 'give exactly one of thread_id and scope',
    path: ['thread_id'],
  });
export type ExecuteCodeRequest = z.infer<typeof ExecuteCodeRequest>;
export type ExecuteCodeRequestInput = z.input<typeof ExecuteCodeRequest>;

export const EXECUTE_CODE_EXIT_STATUSES = [
  'ok',
  'error',
  'timeout',
  'oom',
  'cap_exceeded',
  'provisioning',
] as const;
export const ExecuteCodeExitStatus = z.enum(EXECUTE_CODE_EXIT_STATUSES);
export type ExecuteCodeExitStatus = z.infer<typeof ExecuteCodeExitStatus>;

/** What an agent can act on when `ok` is false because the code did not run. */
export const EXECUTE_CODE_ERRORS = ['SandboxProvisioning', 'SandboxCapExceeded', 'SandboxDisabled'] as const;
export const ExecuteCodeError = z.enum(EXECUTE_CODE_ERRORS);
export type ExecuteCodeError = z.infer<typeof ExecuteCodeError>;

export const CAP_DIMENSIONS = ['tenant_daily', 'agent_hourly'] as const;
export const CapDimension = z.enum(CAP_DIMENSIONS);
export type CapDimension = z.infer<typeof CapDimension>;

export const ExecuteCodeResult = z.object({
  ok: z.boolean().describe('True only when the code ran and exited 0'),
  exit_status: ExecuteCodeExitStatus,
  stdout: z.string().describe('Redacted; at most 256 KiB'),
  stderr: z.string().describe('Redacted; at most 32 KiB'),
  stdout_truncated: z.boolean(),
  stderr_truncated: z.boolean(),
  exit_code: z.number().int().nullable(),
  duration_ms: z.number().int().nonnegative(),
  invocation_id: z.uuid().describe('The sandbox_invocations row of this call'),
  sandbox_id: Id.nullable().describe('Null when no sandbox was used'),
  error: ExecuteCodeError.optional().describe('Why the code did not run'),
  error_message: z.string().optional(),
  dimension: CapDimension.optional().describe('With SandboxCapExceeded: the cap that fired'),
  resets_at: Timestamp.optional().describe('With SandboxCapExceeded: when that cap resets'),
  retryable: z.boolean().optional().describe('With an error: whether retrying later can succeed'),
});
export type ExecuteCodeResult = z.infer<typeof ExecuteCodeResult>;

/**
 * A short sentence for a model about a result it should act on in a particular way (a cap
 * that fired, a disabled tenant, a sandbox that is not ready, a timeout); undefined otherwise.
 * The LangChain and MCP `execute_code` tools add it to the result as `hint`.
 */
export function executeCodeHint(result: ExecuteCodeResult): string | undefined {
  if (result.error === 'SandboxCapExceeded')
    return (
      `execute_code is capped (${result.dimension ?? 'quota'}) until ${result.resets_at ?? 'the cap resets'}; ` +
      'do not retry before then, tell the user.'
    );
  if (result.error === 'SandboxDisabled')
    return 'execute_code is disabled for this tenant; do not retry, tell the user.';
  if (result.error === 'SandboxProvisioning')
    return result.retryable === true
      ? 'the sandbox is not ready yet; retrying shortly may work.'
      : 'the sandbox cannot run code now; do not retry, tell the user.';
  if (result.exit_status === 'timeout')
    return 'the code ran past its time limit and was stopped; do less per call or raise timeout_ms.';
  if (result.exit_status === 'oom') return 'the code ran out of memory and was stopped; use less memory.';
  return undefined;
}
