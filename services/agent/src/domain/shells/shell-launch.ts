import { existsSync } from 'node:fs';

export interface ShellProgram {
  readonly file: string;
  readonly args: readonly string[];
}

/** bash when the image has it, else the POSIX shell; both as login shells (profile read, like ssh). */
export function defaultShellProgram(): ShellProgram {
  return { file: existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh', args: ['-l'] };
}

export interface ShellEnvironmentBase {
  readonly home: string;
  readonly path: string;
  readonly lang: string;
  readonly shell: string;
}

/**
 * Built from nothing: the agent's own environment holds the signing key and never
 * reaches a user process. The client policy's injected variables (never HOME) come next;
 * the request's variables come last and may override.
 */
export function shellEnvironment(
  base: ShellEnvironmentBase,
  requested: Readonly<Record<string, string>> = {},
  injected: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    PATH: base.path,
    HOME: base.home,
    LANG: base.lang,
    TERM: 'xterm-256color',
    SHELL: base.shell,
    ...injected,
    ...requested,
  };
}
