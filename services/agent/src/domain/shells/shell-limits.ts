import type { ShellProgram } from './shell-launch.js';

/** Tunables of the shells domain; every one has a default. */
export interface ShellLimits {
  /** The program a new shell runs; default `/bin/bash -l`, or `/bin/sh -l` without bash. */
  readonly program?: ShellProgram;
  /** PATH of a new shell. */
  readonly path?: string;
  /** LANG of a new shell; default C.UTF-8. */
  readonly lang?: string;
  /** Shells alive at once (attached or not); one more is refused with RATE_LIMITED. Default 16. */
  readonly maxShells?: number;
  /** How long a shell outlives its last client; default 15 minutes. */
  readonly idleGraceMs?: number;
  /** Output kept for replay on reattach; default 1 MiB, at least 256 KiB. */
  readonly scrollbackBytes?: number;
  /** Largest output frame; default 256 KiB (fewer, larger socket writes for bulk output). */
  readonly frameBytes?: number;
  /** How long small output waits to be coalesced into one frame; default 4 ms. */
  readonly batchMs?: number;
  /** A client whose socket holds more unsent bytes than this gets nothing more until it drains; default 1 MiB. */
  readonly socketHighWaterBytes?: number;
  /** A client holding the PTY paused this long while others keep up is dropped (1013); default 10 s. */
  readonly slowClientTimeoutMs?: number;
  /** SIGHUP first; SIGKILL when the shell has not ended after this long; default 2 s. */
  readonly killGraceMs?: number;
}

export type ResolvedShellLimits = Required<ShellLimits> & {
  /** A client this far behind the newest output pauses the PTY … */
  readonly pauseAtBytes: number;
  /** … which resumes once every client is at most this far behind. */
  readonly resumeAtBytes: number;
};

const MIN_SCROLLBACK = 256 * 1024;
/** The terminal reader takes at most 64 KiB at once (pty-terminal.ts); pausing leaves room for one more read. */
const READ_HEADROOM = 128 * 1024;

export function resolveShellLimits(
  limits: ShellLimits,
  defaultProgram: () => ShellProgram,
): ResolvedShellLimits {
  const scrollbackBytes = Math.max(MIN_SCROLLBACK, limits.scrollbackBytes ?? 1024 * 1024);
  return {
    program: limits.program ?? defaultProgram(),
    path: limits.path ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    lang: limits.lang ?? 'C.UTF-8',
    maxShells: Math.max(1, limits.maxShells ?? 16),
    idleGraceMs: Math.max(0, limits.idleGraceMs ?? 15 * 60_000),
    scrollbackBytes,
    frameBytes: Math.max(4, Math.min(limits.frameBytes ?? 256 * 1024, scrollbackBytes / 4)),
    batchMs: Math.max(0, limits.batchMs ?? 4),
    socketHighWaterBytes: Math.max(1, limits.socketHighWaterBytes ?? 1024 * 1024),
    slowClientTimeoutMs: Math.max(1, limits.slowClientTimeoutMs ?? 10_000),
    killGraceMs: Math.max(0, limits.killGraceMs ?? 2000),
    pauseAtBytes: scrollbackBytes - READ_HEADROOM,
    resumeAtBytes: Math.floor(scrollbackBytes / 2),
  };
}
