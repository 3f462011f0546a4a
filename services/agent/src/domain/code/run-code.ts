import type { CodeExitStatus, CodeLanguage } from '@sbx/protocol';
import type { ExitStatus } from '../exec/exit-status.js';
import type { OutputCapture } from '../exec/output-capture.js';
import type { ProcessSupervisor } from '../exec/process-supervisor.js';
import { runExec } from '../exec/run-exec.js';
import { classifyExit, TailBuffer } from './classify-exit.js';
import { CODE_ENVIRONMENT, languageCommand } from './language-command.js';
import { createRedactor } from './redactor.js';

export interface CodeRun {
  readonly language: CodeLanguage;
  readonly code: string;
  readonly timeoutMs: number;
  readonly memoryLimitMb: number;
}

export interface CodeRunLimits {
  /** Bytes of redacted stdout / stderr kept (the first ones); all are counted. */
  readonly maxStdoutBytes: number;
  readonly maxStderrBytes: number;
  /** Between SIGTERM and SIGKILL when the timeout strikes. */
  readonly killGraceMs: number;
  /** Bytes at the end of redacted stderr searched for an allocation failure (default 8 KiB). */
  readonly stderrTailBytes?: number;
}

export interface CodeRunResult {
  readonly exitStatus: CodeExitStatus;
  readonly status: ExitStatus;
  /** Both already redacted. */
  readonly stdout: OutputCapture;
  readonly stderr: OutputCapture;
  readonly durationMs: number;
  /** Secrets replaced in both streams. */
  readonly redactions: number;
}

export const CODE_OUTPUT_LIMITS = { maxStdoutBytes: 256 * 1024, maxStderrBytes: 32 * 1024 } as const;

/**
 * Runs one snippet to completion through the exec machinery (launcher, process group,
 * slots, timeout and hang-up kills): code on stdin, a memory limit, an environment of its
 * own, every output byte through a redactor before it is kept (docs/code-runner.md).
 */
export async function runCode(
  supervisor: ProcessSupervisor,
  run: CodeRun,
  limits: CodeRunLimits,
  now: () => number,
  abort?: AbortSignal,
): Promise<CodeRunResult> {
  const command = languageCommand(run.language, run.memoryLimitMb, run.code);
  const stdout = createRedactor();
  const stderr = createRedactor();
  const tail = new TailBuffer(limits.stderrTailBytes ?? 8 * 1024);
  const result = await runExec(
    supervisor,
    {
      argv: command.argv,
      env: CODE_ENVIRONMENT,
      pure: true,
      stdin: command.stdin,
      timeoutMs: run.timeoutMs,
      transform: {
        stdout,
        stderr: { write: (chunk) => tail.keep(stderr.write(chunk)), end: () => tail.keep(stderr.end()) },
      },
    },
    limits,
    now,
    abort,
  );
  return {
    exitStatus: classifyExit(result.status, result.timedOut, tail.text()),
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    durationMs: result.durationMs,
    redactions: stdout.replacements + stderr.replacements,
  };
}
