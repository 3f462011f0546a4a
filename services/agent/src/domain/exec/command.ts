import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { LaunchSpec } from '../../adapters/launcher.js';
import type { PathGuard } from '../files/path-guard.js';
import { resolveWorkingDirectory } from './working-directory.js';

/** What a caller asks to run: exactly one of `argv` (no shell) or `cmd` (`/bin/sh -c`). */
export interface CommandRequest {
  readonly argv?: readonly string[] | undefined;
  readonly cmd?: string | undefined;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** execute_code: pure compute, without the client policy's injected variables. */
  readonly pure?: boolean | undefined;
}

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * A user process's environment, built from nothing: the agent's own environment
 * holds its signing key and must never reach a child. The request's variables win.
 */
export function childEnvironment(
  home: string,
  requested: Readonly<Record<string, string>> = {},
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOME: home, LANG: 'C.UTF-8', ...extra, ...requested };
}

/** The program and arguments of a request (`cmd` runs under `/bin/sh -c`). */
export function programOf(request: CommandRequest): { readonly file: string; readonly args: string[] } {
  if (request.cmd !== undefined) return { file: '/bin/sh', args: ['-c', request.cmd] };
  const [file = '', ...args] = request.argv ?? [];
  return { file, args };
}

/** Resolves the working directory and environment of a request into what the launcher plans from. */
export async function launchSpecOf(
  workspace: PathGuard,
  request: CommandRequest,
  injected: Readonly<Record<string, string>> = {},
): Promise<LaunchSpec> {
  const cwd = await resolveWorkingDirectory(workspace, request.cwd);
  const env = childEnvironment(workspace.workspace, request.env, request.pure === true ? {} : injected);
  return { ...programOf(request), cwd, env };
}

/** The first of `names` found as an executable on the children's default PATH. */
export function findExecutable(names: readonly string[], searchPath = DEFAULT_PATH): string | undefined {
  for (const name of names) {
    const candidates = name.includes('/') ? [name] : searchPath.split(':').map((dir) => path.join(dir, name));
    for (const candidate of candidates) {
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // not here; try the next directory
      }
    }
  }
  return undefined;
}

/** A short description for logs: the program only, never arguments (they may carry secrets). */
export function programLabel(request: CommandRequest): string {
  return request.cmd === undefined ? path.basename(request.argv?.[0] ?? '') : 'sh -c';
}
