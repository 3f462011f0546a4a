import path from 'node:path';

/** What to run: the program, its arguments, where, with which environment. */
export interface LaunchSpec {
  readonly file: string;
  readonly args: readonly string[];
  /** Absolute host path inside the workspace (already confined by the caller). */
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** A PTY's process: keeps the terminal as its controlling tty (no new session). */
  readonly interactive?: boolean;
}

/** A LaunchSpec rewritten for isolation, plus the identity to run it as. */
export interface LaunchPlan extends LaunchSpec {
  readonly uid?: number;
  readonly gid?: number;
}

/** Every user process (exec, background, PTY) starts through one launcher. */
export interface Launcher {
  readonly kind: 'direct' | 'bubblewrap';
  plan(spec: LaunchSpec): LaunchPlan;
}

export interface DirectLauncherOptions {
  /** When the agent runs as root, user processes run as this unprivileged identity. */
  readonly runAs?: { readonly uid: number; readonly gid: number };
}

/** Inside a container: run as is, dropping to an unprivileged uid/gid when configured. */
export function directLauncher(options: DirectLauncherOptions = {}): Launcher {
  return {
    kind: 'direct',
    plan: (spec) => (options.runAs === undefined ? spec : { ...spec, ...options.runAs }),
  };
}

export interface BubblewrapLauncherOptions {
  readonly bwrapPath: string;
  readonly workspaceRoot: string;
  /** Off: the process sees only its own loopback (tenant environment `internal-only`). */
  readonly network: boolean;
  /** Host paths to hide behind an empty tmpfs (e.g. the broker's data directory). */
  readonly hidePaths?: readonly string[];
}

/**
 * bubblewrap: read-only root, the workspace as the only writable path (mounted at
 * its own path, so paths inside and outside agree), private /tmp, own pid namespace,
 * network on or off by policy, and the process dies with the agent.
 */
export function bubblewrapLauncher(options: BubblewrapLauncherOptions): Launcher {
  const workspace = path.resolve(options.workspaceRoot);
  const fixed = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--tmpfs',
    '/run',
    ...(options.hidePaths ?? []).flatMap((hidden) => ['--tmpfs', path.resolve(hidden)]),
    '--bind',
    workspace,
    workspace,
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    ...(options.network ? [] : ['--unshare-net']),
    '--die-with-parent',
  ];
  return {
    kind: 'bubblewrap',
    plan: (spec) => ({
      ...spec,
      file: options.bwrapPath,
      // --new-session stops TIOCSTI injection into the agent's terminal; a PTY needs its own as controlling tty.
      args: [
        ...fixed,
        ...(spec.interactive === true ? [] : ['--new-session']),
        '--chdir',
        spec.cwd,
        '--',
        spec.file,
        ...spec.args,
      ],
    }),
  };
}
