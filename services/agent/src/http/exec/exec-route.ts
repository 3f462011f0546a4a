import express, { type Router } from 'express';
import { parseOrThrow, ExecRequest, type ExecResponse } from '@sbx/protocol';
import { jsonBodyOf } from '@sbx/service-kit';
import { decodeData, encodeBytes, encodeCutBytes } from '../../domain/exec/byte-encoding.js';
import { commandTextOf, type CommandLog } from '../../domain/commands/command-log.js';
import type { OutputCapture } from '../../domain/exec/output-capture.js';
import type { ProcessSupervisor } from '../../domain/exec/process-supervisor.js';
import { runExec, type ExecResult } from '../../domain/exec/run-exec.js';
import { capabilityOf, requireCapability } from '../capability.js';
import { beginCommand, loggedStart, outcomeOf } from './command-logging.js';
import type { ResolvedExecOptions } from './exec-options.js';

function encodeCapture(capture: OutputCapture): ReturnType<typeof encodeBytes> {
  const bytes = capture.bytes();
  return capture.truncated ? encodeCutBytes(bytes, { start: false, end: true }) : encodeBytes(bytes);
}

function execResponseOf(result: ExecResult): ExecResponse {
  const stdout = encodeCapture(result.stdout);
  const stderr = encodeCapture(result.stderr);
  return {
    exit_code: result.status.exitCode,
    signal: result.status.signal,
    stdout: stdout.data,
    stderr: stderr.data,
    stdout_encoding: stdout.encoding,
    stderr_encoding: stderr.encoding,
    duration_ms: Math.max(0, Math.round(result.durationMs)),
    timed_out: result.timedOut,
    stdout_truncated: result.stdout.truncated,
    stderr_truncated: result.stderr.truncated,
    stdout_bytes: result.stdout.totalBytes,
    stderr_bytes: result.stderr.totalBytes,
  };
}

/** `POST /v1/exec`: run one program to completion and answer with its output. */
export function mountExecRoute(
  router: Router,
  deps: {
    readonly supervisor: ProcessSupervisor;
    readonly options: ResolvedExecOptions;
    readonly now: () => number;
    readonly commandLog: CommandLog;
  },
): void {
  const json = express.json({ limit: deps.options.maxRequestBytes });
  router.post('/v1/exec', requireCapability('process'), json, async (req, res) => {
    const body = parseOrThrow(ExecRequest, jsonBodyOf(req));
    // A caller that hangs up does not leave its program running.
    const hangUp = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) hangUp.abort();
    });
    const stdin = body.stdin === undefined ? undefined : decodeData(body.stdin, body.stdin_encoding);
    const logged = beginCommand(deps.commandLog, capabilityOf(res), {
      route: 'exec',
      command: commandTextOf(body),
    });
    const run = runExec(
      deps.supervisor,
      {
        argv: body.argv,
        cmd: body.cmd,
        cwd: body.cwd,
        env: body.env,
        stdin,
        timeoutMs: body.timeout_ms ?? deps.options.defaultTimeoutMs,
      },
      {
        maxStdoutBytes: deps.options.maxStdoutBytes,
        maxStderrBytes: deps.options.maxStderrBytes,
        killGraceMs: deps.options.killGraceMs,
      },
      deps.now,
      hangUp.signal,
    );
    const result = await loggedStart(logged, run);
    logged.end(outcomeOf(result.status, result.timedOut));
    res.json(execResponseOf(result));
  });
}
