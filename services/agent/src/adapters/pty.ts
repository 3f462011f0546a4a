import { SbxError } from '@sbx/protocol';
import type { LaunchPlan } from './launcher.js';
import { unixPtyBinding } from './pty-binding.js';
import { TerminalPty } from './pty-terminal.js';

export interface TerminalSize {
  readonly cols: number;
  readonly rows: number;
}

/** How the PTY's own process ended; killed by a signal: `signal` names it and `code` is 128 + its number. */
export interface PtyExit {
  readonly code: number;
  readonly signal?: NodeJS.Signals;
}

/** A pseudo-terminal and the process group behind it, as the shells domain uses it. */
export interface Pty {
  readonly pid: number;
  /** Raw output bytes, in order, never decoded; `chunk` is valid only during the call. */
  onData(listener: (chunk: Buffer) => void): void;
  /** Fires after every byte read before the exit has gone to `onData`. */
  onExit(listener: (exit: PtyExit) => void): void;
  write(data: Buffer): void;
  resize(size: TerminalSize): void;
  /** Signals the terminal's foreground process group: what a keystroke such as Ctrl-C reaches. */
  signalForeground(signal: NodeJS.Signals): void;
  /** Signals the PTY's own process (the session leader). */
  kill(signal: NodeJS.Signals): void;
  /** Stops reading output, so the program blocks on a full terminal instead of growing our memory. */
  pause(): void;
  resume(): void;
}

/** Starts a launcher plan (made with `interactive: true`) on a new PTY. */
export type PtySpawner = (plan: LaunchPlan, size: TerminalSize) => Pty;

/** Unused on Linux, where node-pty forks directly; macOS's posix_spawn helper is not supported. */
const NO_SPAWN_HELPER = '';

/** As node-pty's UnixTerminal sets them: the shell learns its directory and terminal type. */
function terminalEnv(plan: LaunchPlan): string[] {
  const env = { ...plan.env, PWD: plan.cwd, TERM: plan.env['TERM'] ?? 'xterm' };
  return Object.entries(env).map(([name, value]) => `${name}=${value}`);
}

/**
 * node-pty's fork sets the gid and uid but keeps the caller's supplementary groups (libuv's
 * spawn clears them): a root agent handing a terminal to another user first drops its own,
 * which root never needs.
 */
function dropSupplementaryGroups(plan: LaunchPlan): void {
  if ((plan.uid === undefined && plan.gid === undefined) || process.getuid?.() !== 0) return;
  if ((process.getgroups?.() ?? []).length > 0) process.setgroups?.([]);
}

/** node-pty's fork, byte-exact: the environment is exactly the plan's (plus PWD and TERM). */
export const nodePtySpawner: PtySpawner = (plan, size) => {
  if (plan.interactive !== true) throw new SbxError('INTERNAL', 'a PTY needs an interactive launch plan');
  try {
    const binding = unixPtyBinding();
    dropSupplementaryGroups(plan);
    let pty: TerminalPty | undefined;
    // Called from node-pty's waitpid thread through the event loop: never before `pty` is set.
    const onExit = (code: number, signal: number): void => pty?.processExited(code, signal);
    const forked = binding.fork(
      plan.file,
      [...plan.args],
      terminalEnv(plan),
      plan.cwd,
      size.cols,
      size.rows,
      plan.uid ?? -1,
      plan.gid ?? -1,
      false,
      NO_SPAWN_HELPER,
      onExit,
    );
    pty = new TerminalPty(forked.pid, forked.fd, (next) => binding.resize(forked.fd, next.cols, next.rows));
    return pty;
  } catch (err) {
    throw new SbxError('INTERNAL', 'could not start a terminal', { cause: err });
  }
};
