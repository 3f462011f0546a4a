import { z } from 'zod';

/**
 * Wire shapes of the agent's `POST /v1/code` (docs/code-runner.md): run a snippet of
 * Python, JavaScript or bash as pure compute — an environment built from nothing, a
 * memory limit, a timeout — and answer with its output after secret redaction.
 */

export const CODE_LANGUAGES = ['python', 'javascript', 'bash'] as const;
export const CodeLanguage = z.enum(CODE_LANGUAGES);
export type CodeLanguage = z.infer<typeof CodeLanguage>;

/** Longest snippet, in characters (it travels on the program's stdin, not in argv). */
export const MAX_CODE_CHARS = 1024 * 1024;
export const DEFAULT_CODE_TIMEOUT_MS = 30_000;
export const MAX_CODE_TIMEOUT_MS = 3_600_000;
export const DEFAULT_CODE_MEMORY_LIMIT_MB = 512;
export const MIN_CODE_MEMORY_LIMIT_MB = 32;
export const MAX_CODE_MEMORY_LIMIT_MB = 65_536;

export const CodeRunRequest = z.strictObject({
  language: CodeLanguage,
  /** May be empty (the program then does nothing and exits 0). */
  code: z.string().max(MAX_CODE_CHARS),
  timeout_ms: z.number().int().min(1).max(MAX_CODE_TIMEOUT_MS).optional(),
  memory_limit_mb: z.number().int().min(MIN_CODE_MEMORY_LIMIT_MB).max(MAX_CODE_MEMORY_LIMIT_MB).optional(),
});
export type CodeRunRequest = z.infer<typeof CodeRunRequest>;

/**
 * `ok`: exit 0. `timeout`: the timeout struck (the process group was killed).
 * `oom`: killed by SIGKILL/SIGABRT/SIGSEGV, or a non-zero exit whose stderr ends with an
 * allocation failure. `error`: any other ending.
 */
export const CODE_EXIT_STATUSES = ['ok', 'error', 'timeout', 'oom'] as const;
export const CodeExitStatus = z.enum(CODE_EXIT_STATUSES);
export type CodeExitStatus = z.infer<typeof CodeExitStatus>;

/**
 * `stdout`/`stderr` are UTF-8 text (invalid sequences replaced) after redaction;
 * `*_bytes` count every redacted byte the program wrote, `*_truncated` says only the
 * first ones were kept. `redactions` counts the secrets replaced by `[REDACTED:<kind>]`
 * in both streams, `redactor` names the redactor's version.
 */
export const CodeRunResponse = z.object({
  exit_status: CodeExitStatus,
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  stdout_bytes: z.number().int().nonnegative(),
  stderr_bytes: z.number().int().nonnegative(),
  stdout_truncated: z.boolean(),
  stderr_truncated: z.boolean(),
  duration_ms: z.number().int().nonnegative(),
  redactions: z.number().int().nonnegative(),
  redactor: z.string(),
});
export type CodeRunResponse = z.infer<typeof CodeRunResponse>;
