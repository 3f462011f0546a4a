import { z } from 'zod';
import { CodeExitStatus, CodeLanguage } from './code-run.js';
import { ErrorCode } from './errors.js';
import { Timestamp } from './primitives.js';

/**
 * Wire shapes of the agent's `GET /v1/commands/log` (docs/command-log.md): the bounded,
 * in-memory log of the programs the agent started — who, what, when, how it ended.
 * Never stdin, never environment values; PTY shells are not commands.
 */

export const COMMAND_ROUTES = ['exec', 'process', 'exec_ws', 'code', 'legacy'] as const;
export const CommandRoute = z.enum(COMMAND_ROUTES);
export type CommandRoute = z.infer<typeof CommandRoute>;

/** Longest `command` kept: `cmd` as given or argv joined by spaces. */
export const COMMAND_LOG_COMMAND_MAX = 500;
/** Longest first line of a code snippet kept (the `code` and `legacy` routes). */
export const COMMAND_LOG_CODE_LINE_MAX = 200;
export const COMMAND_LOG_DEFAULT_LIMIT = 100;
export const COMMAND_LOG_MAX_LIMIT = 500;

/** A whole decimal number in a query string: no sign, exponent, hex or blanks. */
const QueryInteger = z
  .string()
  .regex(/^\d{1,15}$/, { message: 'must be a whole number' })
  .transform(Number);

export const CommandLogQuery = z.strictObject({
  /** Entries with a larger `seq` only (the `next_after` of the previous page). */
  after: QueryInteger.optional(),
  limit: QueryInteger.pipe(z.number().int().min(1).max(COMMAND_LOG_MAX_LIMIT)).default(
    COMMAND_LOG_DEFAULT_LIMIT,
  ),
});
export type CommandLogQuery = z.infer<typeof CommandLogQuery>;

/**
 * One program the agent started. `sub`/`act_sub`/`jti` come from the verified capability
 * token of the request. `ended_at`, `duration_ms` are null while it runs. `exit_code` is null
 * when a signal ended it (`signal` names it) or it never started (`error` gives the code of
 * the refusal, e.g. RATE_LIMITED when no process slot was free). `language` and
 * `exit_status` are set for the `code` route only.
 */
export const CommandLogEntry = z.object({
  seq: z.number().int().positive(),
  route: CommandRoute,
  sub: z.string(),
  act_sub: z.string().nullable(),
  jti: z.string(),
  command: z.string().max(COMMAND_LOG_COMMAND_MAX),
  language: CodeLanguage.nullable(),
  started_at: Timestamp,
  ended_at: Timestamp.nullable(),
  duration_ms: z.number().int().nonnegative().nullable(),
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  timed_out: z.boolean(),
  exit_status: CodeExitStatus.nullable(),
  error: ErrorCode.nullable(),
});
export type CommandLogEntry = z.infer<typeof CommandLogEntry>;

/**
 * Oldest first (ascending `seq`). `next_after`: pass it as `after` for the next page;
 * null when this page reached the newest entry (poll later with the last item's `seq`).
 */
export const CommandLogPage = z.object({
  items: z.array(CommandLogEntry),
  next_after: z.number().int().nonnegative().nullable(),
});
export type CommandLogPage = z.infer<typeof CommandLogPage>;
