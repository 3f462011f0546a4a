import { TimeoutError, type ExecResult, type SandboxClient } from '@sbx/client';
import type { ExecuteResponse } from 'deepagents';

/** What `execute` answers when the command ran out of time (as deepagents' LocalShellBackend does). */
export const TIMEOUT_EXIT_CODE = 124;

export interface ExecuteLimits {
  /** The command's time limit, after which it is killed and exit code 124 is answered. */
  readonly timeoutMs: number;
  /** At most this many bytes of output are kept (the agent may cut earlier: its own cap). */
  readonly maxOutputBytes: number;
}

/**
 * `sh -c` with stderr sent to stdout inside the shell, so `output` keeps the order the
 * command wrote in (two separate streams joined afterwards would not). `exec 2>&1` comes
 * first on its own line so even a syntax error of the command lands in `output`.
 */
function shellArgv(command: string): string[] {
  return ['sh', '-c', `exec 2>&1\n${command}`];
}

function decode(text: string, encoding: string): Buffer {
  return Buffer.from(text, encoding === 'base64' ? 'base64' : 'utf8');
}

function capped(bytes: Buffer, max: number): { text: string; cut: boolean } {
  if (bytes.length <= max) return { text: bytes.toString('utf8'), cut: false };
  return { text: bytes.subarray(0, max).toString('utf8'), cut: true };
}

export function toExecuteResponse(result: ExecResult, limits: ExecuteLimits): ExecuteResponse {
  const out = Buffer.concat([
    decode(result.stdout, result.stdout_encoding),
    decode(result.stderr, result.stderr_encoding),
  ]);
  const { text, cut } = capped(out, limits.maxOutputBytes);
  const truncated = cut || result.stdout_truncated || result.stderr_truncated;
  const note = truncated
    ? `\n[output truncated: the command wrote ${result.stdout_bytes + result.stderr_bytes} bytes]`
    : '';
  if (result.timed_out) {
    const message = `\n[command timed out after ${limits.timeoutMs} ms and was killed]`;
    return { output: text + note + message, exitCode: TIMEOUT_EXIT_CODE, truncated };
  }
  // A signal leaves no exit code; a shell reports 128 + n, and so do we.
  const exitCode = result.exit_code ?? (result.signal === null ? 1 : 128 + signalNumber(result.signal));
  return { output: text + note, exitCode, truncated };
}

function signalNumber(name: string): number {
  const numbers: Record<string, number> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGQUIT: 3,
    SIGKILL: 9,
    SIGSEGV: 11,
    SIGPIPE: 13,
    SIGTERM: 15,
  };
  return numbers[name] ?? 0;
}

/**
 * Runs `command` in the workspace (the default cwd, also HOME) and never throws for what the
 * command or the sandbox did: deepagents turns a throw from `execute` into a failed agent run,
 * so a transport failure comes back as a value too (exit code 1 and the reason).
 */
export async function runCommand(
  target: { readonly client: SandboxClient; noteFailure?(err: unknown): void },
  command: string,
  limits: ExecuteLimits,
): Promise<ExecuteResponse> {
  try {
    const result = await target.client.exec.run(
      { argv: shellArgv(command) },
      { timeoutMs: limits.timeoutMs },
    );
    return toExecuteResponse(result, limits);
  } catch (err) {
    target.noteFailure?.(err);
    if (err instanceof TimeoutError) {
      const output = `[command timed out after ${limits.timeoutMs} ms: ${err.message}]`;
      return { output, exitCode: TIMEOUT_EXIT_CODE, truncated: false };
    }
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    return { output: `[the sandbox could not run the command: ${reason}]`, exitCode: 1, truncated: false };
  }
}
