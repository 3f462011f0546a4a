import type { RetryPolicy, Shell, ShellExit } from '@sbx/client';
import { loggedIn, parseCommand, positional, type CliContext } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { ThreadSessions } from '../thread-sessions.js';
import { passPipedEnd } from './shell-eof.js';
import { endedAbruptly, endedSandbox } from '../sandbox-ending.js';

/** Ctrl-] (as telnet): leaves the shell running in the sandbox. */
const DETACH_KEY = 0x1d;

/**
 * Reconnecting after a drop: a person at a terminal would rather wait out a network blip
 * (Wi-Fi roaming, a laptop waking) than lose the shell, so up to 10 attempts with backoff
 * capped at 5 s (under 30 s in all) instead of the CLI's three quick ones.
 */
const SHELL_RECONNECT: RetryPolicy = { maxAttempts: 10, baseDelayMs: 250, maxDelayMs: 5_000 };

type Ending = { readonly kind: 'exit'; readonly exit: ShellExit } | { readonly kind: 'detach' };

/**
 * An interactive shell in the sandbox: the terminal in raw mode, resized with the window,
 * reconnected by the SDK when the connection drops. `--id` reattaches (scrollback first),
 * `--observe` watches a shell read-only (`shell:ro`; needs `--id`). Exits with the shell's
 * code; when the sandbox was terminated under it, says so (and by whom, when the broker
 * knows) and exits 4.
 */
export async function shell(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand('shell', args, {
    id: { type: 'string' },
    observe: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const thread = positional('shell', positionals, 0, 'thread');
  const observe = values.observe === true;
  if (observe && values.id === undefined)
    throw new UsageError('shell: --observe watches an existing shell: add --id <shell id>');
  const { config, broker } = loggedIn(ctx);
  const sandbox = await new ThreadSessions(broker, ctx.store, config.actor_id).sandbox(
    thread,
    observe ? 'observer' : 'human',
    { retry: SHELL_RECONNECT },
  );
  const size = { cols: ctx.stdout.columns || 80, rows: ctx.stdout.rows || 24 };
  const remote =
    values.id === undefined ? await sandbox.openShell(size) : await sandbox.attachShell(values.id, size);
  let ending: Ending;
  try {
    ending = await runTerminal(ctx, remote, observe);
  } catch (err) {
    // The connection was lost for good (reconnecting took its time already): ask once.
    throw (await endedSandbox(broker, ctx.store, thread, 1)) ?? err;
  }
  // A hang-up from a sandbox that was terminated says so (exit 4), not `Hangup` and 129.
  if (ending.kind === 'exit' && endedAbruptly(ending.exit)) {
    const terminated = await endedSandbox(broker, ctx.store, thread);
    if (terminated !== undefined) {
      ctx.stderr.write('\r\n');
      throw terminated;
    }
  }
  const report =
    ending.kind === 'detach'
      ? { shell_id: remote.id, detached: true, reattach: `sbx shell ${thread} --id ${remote.id}` }
      : { shell_id: remote.id, exit_code: ending.exit.code };
  if (values.json === true) ctx.stderr.write(`${JSON.stringify(report)}\n`);
  else if (ending.kind === 'detach') {
    ctx.stderr.write(
      `\r\n[detached from shell ${remote.id}; reattach: sbx shell ${thread} --id ${remote.id}]\r\n`,
    );
  }
  return ending.kind === 'detach' ? EXIT.ok : ending.exit.code;
}

/**
 * Wires the terminal to the shell until it exits, fails, or the user detaches. When stdin
 * is not a terminal, its end ends the shell too (see `PipedEnd`).
 */
function runTerminal(ctx: CliContext, remote: Shell, observe: boolean): Promise<Ending> {
  const { stdin, stdout } = ctx;
  const raw = stdin.isTTY;
  if (raw) stdin.setRawMode(true);
  return new Promise<Ending>((resolve, reject) => {
    const cleanups: (() => void)[] = [];
    const finish = (settle: () => void): void => {
      for (const cleanup of cleanups) cleanup();
      if (raw) stdin.setRawMode(false);
      stdin.pause();
      settle();
    };
    const onInput = (chunk: Buffer): void => {
      const detachAt = chunk.indexOf(DETACH_KEY);
      const typed = detachAt === -1 ? chunk : chunk.subarray(0, detachAt);
      if (!observe && typed.length > 0) remote.write(typed);
      if (detachAt === -1) return;
      remote.detach();
      finish(() => resolve({ kind: 'detach' }));
    };
    const onResize = (): void => remote.resize(stdout.columns, stdout.rows);
    stdin.on('data', onInput);
    cleanups.push(() => stdin.off('data', onInput));
    if (!raw && !observe) cleanups.push(passPipedEnd(stdin, remote));
    if (!observe) {
      stdout.on('resize', onResize);
      cleanups.push(() => stdout.off('resize', onResize));
    }
    cleanups.push(remote.onData((data) => stdout.write(data)));
    remote.exited.then(
      (exit) => finish(() => resolve({ kind: 'exit', exit })),
      (err: unknown) => finish(() => reject(err instanceof Error ? err : new Error(String(err)))),
    );
    stdin.resume();
  });
}
