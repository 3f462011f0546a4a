import { constants } from 'node:os';
import type { ExecResult, SandboxClient } from '@sbx/client';
import { loggedIn, parseCommand, positional, printJson, type CliContext } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { ThreadSessions } from '../thread-sessions.js';
import { forwardSignals, OutputFlow } from './exec-io.js';

const USAGE = 'exec: sbx exec <thread> [-i] [--cwd <dir>] [--timeout <seconds>] -- <command> [args…]';

/**
 * Runs a command in the sandbox (through the agent binding: only agents hold `process`),
 * streams its output as it is written and exits with its exit code (128 + n for a signal,
 * as a shell reports it). `-i` passes this process's stdin through (EOF included);
 * Ctrl-C and SIGTERM are passed on to the command; a second one, or 5 s without an exit,
 * gives up on it (exec-io.ts). Output is read no faster than stdout takes it.
 * `--json` waits and prints one result.
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
    interactive: { type: 'boolean', short: 'i' },
  });
  const thread = positional('exec', positionals, 0, 'thread');
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout) * 1000;
  if (timeoutMs !== undefined && !(timeoutMs > 0))
    throw new UsageError(`${USAGE}; --timeout must be a positive number`);
  const { config, broker } = loggedIn(ctx);
  const sandbox = await new ThreadSessions(broker, ctx.store, config.actor_id).sandbox(thread, 'agent');
  const options = {
    ...(values.cwd === undefined ? {} : { cwd: values.cwd }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
  if (values.json !== true) {
    const code = await streamed(ctx, sandbox, argv, options, values.interactive === true);
    hintShellLine(ctx, thread, argv, code);
    return code;
  }
  const result = await sandbox.exec.run({ argv }, options);
  printJson(ctx, result);
  const code = exitCodeOfResult(result);
  hintShellLine(ctx, thread, argv, code);
  return code;
}

/** What a shell answers for a program it cannot find (the agent answers the same). */
const NOT_FOUND_EXIT = 127;

/**
 * `sbx exec t -- 'python3 -c "print(1)"'` runs a program named that whole line, which does
 * not exist (`/usr/bin/env: … No such file or directory`). When that is what happened, say
 * how to run it as the shell line it was meant to be.
 */
function hintShellLine(ctx: CliContext, thread: string, argv: readonly string[], code: number): void {
  const [line] = argv;
  if (code !== NOT_FOUND_EXIT || argv.length !== 1 || line === undefined || !/\s/.test(line.trim())) return;
  ctx.stderr.write(
    `sbx: the command is argv, not a shell line: sbx exec ${thread} -- sh -c ${shellQuoted(line)}\n`,
  );
}

/** `text` as one single-quoted shell word. */
function shellQuoted(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

async function streamed(
  ctx: CliContext,
  sandbox: SandboxClient,
  argv: readonly string[],
  options: { readonly cwd?: string; readonly timeoutMs?: number },
  interactive: boolean,
): Promise<number> {
  const flow = new OutputFlow();
  const run = await sandbox.exec.stream(
    { argv },
    {
      ...options,
      onStdout: (data) => flow.write(ctx.stdout, data),
      onStderr: (data) => flow.write(ctx.stderr, data),
    },
  );
  flow.attach(run);
  const signals = forwardSignals(run);
  if (interactive) pipeStdin(ctx, run);
  else run.closeStdin();
  try {
    const ending = await Promise.race([run.wait(), signals.gaveUp]);
    if (typeof ending === 'number') {
      ctx.stderr.write('sbx: stopped waiting for the command; the connection was closed, which ends it\n');
      return ending;
    }
    if (ending.timedOut) ctx.stderr.write(`sbx: the command timed out and was terminated\n`);
    return ending.code;
  } finally {
    signals.stop();
    ctx.stdin.pause();
  }
}

function pipeStdin(ctx: CliContext, run: { write(data: Uint8Array): void; closeStdin(): void }): void {
  ctx.stdin.on('data', (chunk: Buffer) => run.write(chunk));
  ctx.stdin.once('end', () => run.closeStdin());
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
