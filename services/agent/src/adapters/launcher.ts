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
