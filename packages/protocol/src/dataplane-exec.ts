import { z } from 'zod';
import { Env, FrameEncoding, MAX_EXEC_TIMEOUT_MS, Signal } from './frames.js';

/**
 * Wire shapes of the agent's `/v1/exec` and `/v1/processes` (services/agent validates
 * with them, the SDK parses answers with them).
 *
 * Bytes (stdin, stdout, stderr) travel as UTF-8 text, or as standard base64 when
 * the bytes are not valid UTF-8; the `…encoding` field next to them says which.
 */

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const commandFields = {
  argv: z.array(z.string()).min(1).max(4096).optional(),
  cmd: z.string().min(1).optional(),
  /** Relative to the workspace; must stay inside it, symlinks included. */
  cwd: z.string().min(1).max(4096).optional(),
  env: Env.optional(),
};

function exactlyOneProgram(
  value: { argv?: string[] | undefined; cmd?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if (value.argv !== undefined && value.cmd !== undefined)
    ctx.addIssue({ code: 'custom', path: ['cmd'], message: 'give either argv or cmd, not both' });
  else if (value.argv === undefined && value.cmd === undefined)
    ctx.addIssue({ code: 'custom', path: ['argv'], message: 'one of argv or cmd is required' });
  else if (value.argv?.[0] === '')
    ctx.addIssue({ code: 'custom', path: ['argv', 0], message: 'program name must not be empty' });
}

function base64WhenSaid(field: string, encodingField: string) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const data = value[field];
    if (value[encodingField] === 'base64' && typeof data === 'string' && !BASE64.test(data))
      ctx.addIssue({
        code: 'custom',
        path: [field],
        message: `is not valid base64 although ${encodingField} is "base64"`,
      });
  };
}

export const ExecRequest = z
  .strictObject({
    ...commandFields,
    stdin: z.string().optional(),
    stdin_encoding: FrameEncoding.optional(),
    timeout_ms: z.number().int().positive().max(MAX_EXEC_TIMEOUT_MS).optional(),
  })
  .superRefine(exactlyOneProgram)
  .superRefine(base64WhenSaid('stdin', 'stdin_encoding'));
export type ExecRequest = z.infer<typeof ExecRequest>;

/**
 * `exit_code` is null when a signal ended the program (`signal` names it). A program
 * that cannot be started answers like a shell: exit_code 127 (not found) or 126.
 * `*_bytes` count everything the program wrote; `*_truncated` says only the first
 * bytes up to the cap were kept.
 */
export const ExecResponse = z.object({
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  stdout_encoding: FrameEncoding,
  stderr_encoding: FrameEncoding,
  duration_ms: z.number().int().nonnegative(),
  timed_out: z.boolean(),
  stdout_truncated: z.boolean(),
  stderr_truncated: z.boolean(),
  stdout_bytes: z.number().int().nonnegative(),
  stderr_bytes: z.number().int().nonnegative(),
});
export type ExecResponse = z.infer<typeof ExecResponse>;

export const ProcessStartRequest = z
  .strictObject({ ...commandFields, tag: z.string().min(1).max(200).optional() })
  .superRefine(exactlyOneProgram);
export type ProcessStartRequest = z.infer<typeof ProcessStartRequest>;

export const ProcessStartResponse = z.object({
  process_id: z.string(),
  pid: z.number().int().nullable(),
  started_at: z.string(),
});
export type ProcessStartResponse = z.infer<typeof ProcessStartResponse>;

export const ProcessStatus = z.enum(['running', 'exited']);

export const ProcessInfo = z.object({
  process_id: z.string(),
  pid: z.number().int().nullable(),
  tag: z.string().nullable(),
  argv: z.array(z.string()).nullable(),
  cmd: z.string().nullable(),
  cwd: z.string(),
  status: ProcessStatus,
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  started_at: z.string(),
  exited_at: z.string().nullable(),
  started_by: z.string(),
  stdin_open: z.boolean(),
  stdout_bytes: z.number().int().nonnegative(),
  stderr_bytes: z.number().int().nonnegative(),
  stdout_dropped_bytes: z.number().int().nonnegative(),
  stderr_dropped_bytes: z.number().int().nonnegative(),
});
export type ProcessInfo = z.infer<typeof ProcessInfo>;

export const ProcessList = z.object({ processes: z.array(ProcessInfo) });
export type ProcessList = z.infer<typeof ProcessList>;

export const OutputStreamChoice = z.enum(['stdout', 'stderr', 'both']);

export const ProcessOutputQuery = z.object({
  stream: OutputStreamChoice.default('both'),
  /** The newest N bytes of each stream (everything still buffered when absent). */
  tail: z.coerce.number().int().nonnegative().optional(),
  follow: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((value) => value === 'true' || value === '1'),
});
export type ProcessOutputQuery = z.infer<typeof ProcessOutputQuery>;

/** One stream's buffered output: `bytes` ever written, `dropped_bytes` lost to the ring buffer. */
export const StreamOutput = z.object({
  data: z.string(),
  encoding: FrameEncoding,
  bytes: z.number().int().nonnegative(),
  dropped_bytes: z.number().int().nonnegative(),
});
export type StreamOutput = z.infer<typeof StreamOutput>;

export const ProcessOutputResponse = z.object({
  process_id: z.string(),
  status: ProcessStatus,
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  stdout: StreamOutput.optional(),
  stderr: StreamOutput.optional(),
});
export type ProcessOutputResponse = z.infer<typeof ProcessOutputResponse>;

/** `follow=true` answers NDJSON: output lines as they come, then exactly one exit line. */
export const FollowOutputLine = z.object({
  stream: z.enum(['stdout', 'stderr']),
  data: z.string(),
  encoding: FrameEncoding,
});
export type FollowOutputLine = z.infer<typeof FollowOutputLine>;

/** The last line of a followed output: how the process ended. */
export const FollowExitLine = z.object({
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
});
export type FollowExitLine = z.infer<typeof FollowExitLine>;

export const ProcessStdinRequest = z
  .strictObject({
    data: z.string().default(''),
    encoding: FrameEncoding.optional(),
    eof: z.boolean().optional(),
  })
  .superRefine(base64WhenSaid('data', 'encoding'));
export type ProcessStdinRequest = z.infer<typeof ProcessStdinRequest>;

/** What `POST /v1/processes/{id}/stdin` wrote, and whether the process's stdin is still open. */
export const ProcessStdinResponse = z.object({
  process_id: z.string(),
  written_bytes: z.number().int().nonnegative(),
  stdin_open: z.boolean(),
});
export type ProcessStdinResponse = z.infer<typeof ProcessStdinResponse>;

/** `/v1/processes/{id}…`: the `process_id` the start answered. */
export const ProcessPathParams = z.strictObject({ id: z.string().min(1) });

export const ProcessSignalRequest = z.strictObject({ signal: Signal });
export type ProcessSignalRequest = z.infer<typeof ProcessSignalRequest>;

/**
 * The legacy `/execute` body (docs/protocol.md#legacy-endpoints): `code` is required, anything
 * else (e.g. `user_id`) is ignored.
 */
export const LegacyExecuteRequest = z.looseObject({ code: z.string().min(1) });
export type LegacyExecuteRequest = z.infer<typeof LegacyExecuteRequest>;
