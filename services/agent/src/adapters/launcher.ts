import { bubblewrapConfinementArgs, type BubblewrapConfinement } from '@sbx/service-kit';

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

/** `network` off (tenant environment `internal-only`): the process sees only its own loopback. */
export interface BubblewrapLauncherOptions extends BubblewrapConfinement {
  readonly bwrapPath: string;
}

/** bubblewrap: every process under the confinement of `bubblewrapConfinementArgs`. */
export function bubblewrapLauncher(options: BubblewrapLauncherOptions): Launcher {
  const fixed = bubblewrapConfinementArgs(options);
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
