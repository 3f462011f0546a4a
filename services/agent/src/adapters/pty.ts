import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { spawn, type IPty } from 'node-pty';
import { SbxError } from '@sbx/protocol';
import type { LaunchPlan } from './launcher.js';

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
  /** Raw output bytes, in order; never decoded here. */
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

function isSignalName(name: string): name is NodeJS.Signals {
  return Object.hasOwn(constants.signals, name);
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>();
for (const [name, number] of Object.entries(constants.signals)) {
  if (isSignalName(name)) SIGNAL_NAMES.set(number, name);
}

/** Field 8 of /proc/<pid>/stat (tpgid); the name field may hold spaces, so count from its `)`. */
function foregroundGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const tpgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[5]);
    return Number.isInteger(tpgid) && tpgid > 0 ? tpgid : undefined;
  } catch {
    return undefined;
  }
}

function sendSignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch {
    // Already gone: nothing left to signal.
  }
}

class NodePty implements Pty {
  #exited = false;

  constructor(private readonly term: IPty) {
    term.onExit(() => (this.#exited = true));
  }

  get pid(): number {
    return this.term.pid;
  }

  onData(listener: (chunk: Buffer) => void): void {
    // With `encoding: null` node-pty hands over Buffers although its typings say string.
    this.term.onData((data: string | Buffer) =>
      listener(typeof data === 'string' ? Buffer.from(data) : data),
    );
  }

  onExit(listener: (exit: PtyExit) => void): void {
    this.term.onExit(({ exitCode, signal }) => {
      const name = signal === undefined || signal === 0 ? undefined : SIGNAL_NAMES.get(signal);
      const exit: PtyExit =
        name === undefined ? { code: exitCode } : { code: 128 + (signal ?? 0), signal: name };
      // node-pty may report the exit in the same tick as the last read; let that data go first.
      setImmediate(() => listener(exit));
    });
  }

  write(data: Buffer): void {
    // Input for a terminal whose program has gone has nowhere to go (node-pty would log EBADF).
    if (!this.#exited) this.term.write(data);
  }

  resize(size: TerminalSize): void {
    try {
      this.term.resize(size.cols, size.rows);
    } catch {
      // The terminal closed between the program's exit and our hearing of it: nothing to resize.
    }
  }

  signalForeground(signal: NodeJS.Signals): void {
    const group = foregroundGroupOf(this.term.pid);
    sendSignal(group === undefined ? this.term.pid : -group, signal);
  }

  kill(signal: NodeJS.Signals): void {
    sendSignal(this.term.pid, signal);
  }

  pause(): void {
    this.term.pause();
  }

  resume(): void {
    this.term.resume();
  }
}

/** node-pty, byte-exact (`encoding: null`): the environment is exactly the plan's. */
export const nodePtySpawner: PtySpawner = (plan, size) => {
  if (plan.interactive !== true) throw new SbxError('INTERNAL', 'a PTY needs an interactive launch plan');
  try {
    const term = spawn(plan.file, [...plan.args], {
      cols: size.cols,
      rows: size.rows,
      cwd: plan.cwd,
      env: { ...plan.env },
      encoding: null,
      ...(plan.uid === undefined ? {} : { uid: plan.uid }),
      ...(plan.gid === undefined ? {} : { gid: plan.gid }),
    });
    return new NodePty(term);
  } catch (err) {
    throw new SbxError('INTERNAL', 'could not start a terminal', { cause: err });
  }
};
