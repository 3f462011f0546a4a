import type { SandboxNamespace } from '@sbx/service-kit';

/** What to run: the program, its arguments, where, with which environment. */
export interface LaunchSpec {
  readonly file: string;
  readonly args: readonly string[];
  /** Absolute path inside the workspace (already confined by the caller). */
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
  /**
   * A split agent (agent-identity.ts): user processes take the user's ids as their real
   * ones too, through setpriv (setreuid to one's effective id needs no privilege), so
   * nothing of the agent's own identity reaches them.
   */
  readonly user?: { readonly uid: number; readonly gid: number };
}

const SETPRIV = '/usr/bin/setpriv';

/** Inside a container: run as is (as the user, when the agent's identity is split). */
export function directLauncher(options: DirectLauncherOptions = {}): Launcher {
  const user = options.user;
  return {
    kind: 'direct',
    plan: (spec) =>
      user === undefined
        ? spec
        : {
            ...spec,
            file: SETPRIV,
            args: [
              '--reuid',
              String(user.uid),
              '--regid',
              String(user.gid),
              '--keep-groups',
              '--',
              spec.file,
              ...spec.args,
            ],
          },
  };
}

/**
 * bubblewrap: every process joins the sandbox's one set of namespaces (held by a
 * SandboxNamespace the agent starts once), as the sandbox's unprivileged user.
 */
export function bubblewrapLauncher(namespace: SandboxNamespace): Launcher {
  return {
    kind: 'bubblewrap',
    plan: (spec) => ({
      ...namespace.joinPlan(spec),
      ...(spec.interactive === undefined ? {} : { interactive: spec.interactive }),
    }),
  };
}
