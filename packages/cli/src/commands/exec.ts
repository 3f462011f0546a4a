import { constants } from 'node:os';
import type { ExecResult } from '@sbx/client';
import { loggedIn, parseCommand, positional, printJson, type CliContext } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { ThreadSessions } from '../thread-sessions.js';

const USAGE = 'exec: sbx exec <thread> [--cwd <dir>] [--timeout <seconds>] -- <command> [args…]';

/**
 * Runs a command to completion in the sandbox (through the agent binding: only agents hold
 * `process`), passes its output through and exits with its exit code (128 + n for a
 * signal, as a shell reports it).
 */
export async function exec(ctx: CliContext, args: readonly string[]): Promise<number> {
  const separator = args.indexOf('--');
  if (separator === -1) throw new UsageError(USAGE);
  const argv = args.slice(separator + 1);
  if (argv.length === 0) throw new UsageError(USAGE);
  const { values, positionals } = parseCommand('exec', args.slice(0, separator), {
    cwd: { type: 'string' },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
  });
  const thread = positional('exec', positionals, 0, 'thread');
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout) * 1000;
  if (timeoutMs !== undefined && !(timeoutMs > 0))
    throw new UsageError(`${USAGE}; --timeout must be a positive number`);
  const { config, broker } = loggedIn(ctx);
  const sandbox = await new ThreadSessions(broker, ctx.store, config.actor_id).sandbox(thread, 'agent');
  const result = await sandbox.exec.run(
    { argv },
    {
      ...(values.cwd === undefined ? {} : { cwd: values.cwd }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    },
  );
  if (values.json === true) printJson(ctx, result);
  else {
    ctx.stdout.write(decoded(result.stdout, result.stdout_encoding));
    ctx.stderr.write(decoded(result.stderr, result.stderr_encoding));
    if (result.timed_out) ctx.stderr.write(`sbx: the command timed out after ${result.duration_ms} ms\n`);
  }
  return exitCodeOfResult(result);
}

function decoded(data: string, encoding: ExecResult['stdout_encoding']): Buffer {
  return Buffer.from(data, encoding === 'base64' ? 'base64' : 'utf8');
}

function exitCodeOfResult(result: ExecResult): number {
  if (result.exit_code !== null) return result.exit_code;
  const signalNumber = result.signal === null ? undefined : signalNumberOf(result.signal);
  return signalNumber === undefined ? EXIT.failed : 128 + signalNumber;
}

function signalNumberOf(name: string): number | undefined {
  const entry = Object.entries(constants.signals).find(([signal]) => signal === name);
  return entry?.[1];
}
