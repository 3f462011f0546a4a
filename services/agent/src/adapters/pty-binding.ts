import nodePtyUtils from 'node-pty/lib/utils.js';

/** A process started on a new PTY: the master side's descriptor and the child's pid. */
export interface ForkedTerminal {
  readonly fd: number;
  readonly pid: number;
}

/**
 * The part of node-pty's native binding (pinned at 1.1.0) that its own UnixTerminal is
 * built on. The agent reads the master side itself (see pty-terminal.ts) instead of
 * through UnixTerminal, whose socket allocates a fresh buffer for every read.
 */
export interface UnixPtyBinding {
  fork(
    file: string,
    args: string[],
    env: string[],
    cwd: string,
    cols: number,
    rows: number,
    uid: number,
    gid: number,
    useUtf8: boolean,
    helperPath: string,
    onExit: (code: number, signal: number) => void,
  ): ForkedTerminal;
  resize(fd: number, cols: number, rows: number): void;
}

function isUnixPtyBinding(value: unknown): value is UnixPtyBinding {
  return (
    typeof value === 'object' &&
    value !== null &&
    'fork' in value &&
    typeof value.fork === 'function' &&
    'resize' in value &&
    typeof value.resize === 'function'
  );
}

let loaded: UnixPtyBinding | undefined;

/** Loaded on first use, so an agent that never opens a shell never loads native code. */
export function unixPtyBinding(): UnixPtyBinding {
  if (loaded !== undefined) return loaded;
  const { module } = nodePtyUtils.loadNativeModule('pty');
  if (!isUnixPtyBinding(module)) throw new Error('node-pty native binding has no fork/resize');
  loaded = module;
  return loaded;
}
