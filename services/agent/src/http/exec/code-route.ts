import express, { type Router } from 'express';
import {
  CodeRunRequest,
  DEFAULT_CODE_MEMORY_LIMIT_MB,
  DEFAULT_CODE_TIMEOUT_MS,
  parseOrThrow,
  type CodeRunResponse,
} from '@sbx/protocol';
import { jsonBodyOf } from '@sbx/service-kit';
import { incompleteTailLength } from '../../domain/exec/byte-encoding.js';
import { codeLineOf, type CommandLog } from '../../domain/commands/command-log.js';
import type { OutputCapture } from '../../domain/exec/output-capture.js';
import type { ProcessSupervisor } from '../../domain/exec/process-supervisor.js';
import { REDACTOR_VERSION } from '../../domain/code/redactor.js';
import { CODE_OUTPUT_LIMITS, runCode, type CodeRunResult } from '../../domain/code/run-code.js';
import { capabilityOf, requireCapability } from '../capability.js';
import { beginCommand, loggedStart, outcomeOf } from './command-logging.js';
import type { ResolvedExecOptions } from './exec-options.js';

/** The code route's own limits; by default 256 KiB of stdout and 32 KiB of stderr. */
export interface CodeRouteOptions {
  readonly maxStdoutBytes?: number;
  readonly maxStderrBytes?: number;
}

/** UTF-8 text of a capture; a character cut by truncation is dropped, invalid bytes become U+FFFD. */
function textOf(capture: OutputCapture): string {
  const bytes = capture.bytes();
  const end = capture.truncated ? bytes.length - incompleteTailLength(bytes) : bytes.length;
  return bytes.subarray(0, end).toString('utf8');
}

function codeResponseOf(result: CodeRunResult): CodeRunResponse {
  return {
    exit_status: result.exitStatus,
    exit_code: result.status.exitCode,
    signal: result.status.signal,
    stdout: textOf(result.stdout),
    stderr: textOf(result.stderr),
    stdout_bytes: result.stdout.totalBytes,
    stderr_bytes: result.stderr.totalBytes,
    stdout_truncated: result.stdout.truncated,
    stderr_truncated: result.stderr.truncated,
    duration_ms: Math.max(0, Math.round(result.durationMs)),
    redactions: result.redactions,
    redactor: REDACTOR_VERSION,
  };
}

/** `POST /v1/code`: run a snippet of Python, JavaScript or bash and answer with its redacted output. */
export function mountCodeRoute(
  router: Router,
  deps: {
    readonly supervisor: ProcessSupervisor;
    readonly options: ResolvedExecOptions;
    readonly now: () => number;
    readonly commandLog: CommandLog;
    readonly code?: CodeRouteOptions;
  },
): void {
  const json = express.json({ limit: deps.options.maxRequestBytes });
  const limits = {
    maxStdoutBytes: deps.code?.maxStdoutBytes ?? CODE_OUTPUT_LIMITS.maxStdoutBytes,
    maxStderrBytes: deps.code?.maxStderrBytes ?? CODE_OUTPUT_LIMITS.maxStderrBytes,
    killGraceMs: deps.options.killGraceMs,
  };
  router.post('/v1/code', requireCapability('process'), json, async (req, res) => {
    const body = parseOrThrow(CodeRunRequest, jsonBodyOf(req));
    // A caller that hangs up does not leave its snippet running.
    const hangUp = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) hangUp.abort();
    });
    const run = {
      language: body.language,
      code: body.code,
      timeoutMs: body.timeout_ms ?? DEFAULT_CODE_TIMEOUT_MS,
      memoryLimitMb: body.memory_limit_mb ?? DEFAULT_CODE_MEMORY_LIMIT_MB,
    };
    const logged = beginCommand(deps.commandLog, capabilityOf(res), {
      route: 'code',
      command: codeLineOf(body.code),
      language: body.language,
    });
    const result = await loggedStart(logged, runCode(deps.supervisor, run, limits, deps.now, hangUp.signal));
    logged.end(outcomeOf(result.status, result.exitStatus === 'timeout', result.exitStatus));
    res.json(codeResponseOf(result));
  });
}
