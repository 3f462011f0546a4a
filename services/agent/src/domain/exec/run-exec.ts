import type { CommandRequest } from './command.js';
import type { ExitStatus } from './exit-status.js';
import { OutputCapture } from './output-capture.js';
import type { ProcessSupervisor } from './process-supervisor.js';

export interface ExecRequest extends CommandRequest {
  /** Written to the program's stdin, then end of file; without it stdin is closed at once. */
  readonly stdin?: Buffer | undefined;
  readonly timeoutMs: number;
  /** Applied to each stream's chunks before capture (the code runner's redaction); none by default. */
  readonly transform?: { readonly stdout: OutputTransform; readonly stderr: OutputTransform } | undefined;
}

/** Bytes in, bytes out (maybe later): `end` gives what is still held once the stream is over. */
export interface OutputTransform {
  write(chunk: Buffer): Buffer;
  end(): Buffer;
}

export interface ExecLimits {
  readonly maxStdoutBytes: number;
  readonly maxStderrBytes: number;
  /** Between SIGTERM and SIGKILL when the timeout strikes. */
  readonly killGraceMs: number;
}

export interface ExecResult {
  readonly status: ExitStatus;
  readonly stdout: OutputCapture;
  readonly stderr: OutputCapture;
  readonly durationMs: number;
  readonly timedOut: boolean;
}

/**
 * Runs one program to completion. On timeout its whole process group gets SIGTERM,
 * then SIGKILL after a grace; `abort` (the caller went away) kills it at once.
 */
export async function runExec(
  supervisor: ProcessSupervisor,
  request: ExecRequest,
  limits: ExecLimits,
  now: () => number,
  abort?: AbortSignal,
): Promise<ExecResult> {
  const stdout = new OutputCapture(limits.maxStdoutBytes);
  const stderr = new OutputCapture(limits.maxStderrBytes);
  const startedAt = now();
  const transform = request.transform;
  const group = await supervisor.start(request, (stream, chunk) =>
    (stream === 'stdout' ? stdout : stderr).write(transform?.[stream].write(chunk) ?? chunk),
  );
  group.endStdin(request.stdin);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    group.terminate(limits.killGraceMs);
  }, request.timeoutMs);
  const onAbort = (): void => group.kill();
  abort?.addEventListener('abort', onAbort, { once: true });
  if (abort?.aborted === true) onAbort();
  try {
    const status = await group.exited;
    if (transform !== undefined) {
      stdout.write(transform.stdout.end());
      stderr.write(transform.stderr.end());
    }
    return { status, stdout, stderr, durationMs: now() - startedAt, timedOut };
  } finally {
    clearTimeout(timer);
    abort?.removeEventListener('abort', onAbort);
  }
}
