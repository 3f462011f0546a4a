import { UsageError } from './exit-codes.js';

/**
 * `<thread>:<path>` as scp writes it. The path is a sandbox path, as the sandbox's own
 * processes (`sbx exec`, `sbx shell`) read it: relative to the workspace (`t1:src/a.py`;
 * `t1:` alone is the workspace itself, `.`), or absolute anywhere in the sandbox
 * (`t1:/workspace/src/a.py` under bubblewrap, `t1:/tmp/f`, `t1:/etc/os-release`). The
 * sandbox user's permissions decide, as for its processes: a write to a read-only place
 * (`t1:/etc/x`) is refused (403), and so is anything under `/proc`.
 */
export interface RemotePath {
  readonly thread: string;
  readonly path: string;
}

/** The workspace itself, as a relative sandbox path. */
export const WORKSPACE = '.';

/** An example for usage lines. */
export const REMOTE_EXAMPLE = 'thr_1:src/main.py';

/**
 * A remote path, or undefined for a local one. As with scp, a colon before any `/` makes it
 * remote (`t1:/a`, `t1:a`), so `./x:y` and `/tmp/a:b` stay local. The path is kept as
 * written: relative stays relative to the workspace, `t1:` is the workspace (`.`).
 */
export function parseRemotePath(text: string): RemotePath | undefined {
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  const slash = text.indexOf('/');
  if (slash !== -1 && slash < colon) return undefined;
  const rest = text.slice(colon + 1);
  return { thread: text.slice(0, colon), path: rest === '' ? WORKSPACE : rest };
}

export function requireRemotePath(command: string, text: string | undefined): RemotePath {
  const remote = text === undefined ? undefined : parseRemotePath(text);
  if (remote === undefined)
    throw new UsageError(`${command}: expected <thread>:<path>, e.g. ${REMOTE_EXAMPLE}`);
  return remote;
}

/** `name` in the sandbox directory `dir` (relative or absolute): `.` + `a` → `a`, `d/` + `a` → `d/a`. */
export function joinRemote(dir: string, name: string): string {
  if (isWorkspaceText(dir)) return name;
  return `${dir.replace(/\/+$/, '')}/${name}`;
}

/**
 * The absolute sandbox path of `text` for a sandbox whose workspace is `workspace`: what
 * the agent's answers (listings, stats, watch events) name it by. Empty and `.` segments
 * and trailing slashes go; `..` is kept for the agent to refuse, never resolved here.
 */
export function absoluteRemote(workspace: string, text: string): string {
  const names = text.split('/').filter((name) => name !== '' && name !== '.');
  if (text.startsWith('/')) return `/${names.join('/')}`;
  const base = workspace.replace(/\/+$/, '');
  return names.length === 0 ? base || '/' : `${base}/${names.join('/')}`;
}

/** `''`, `.`, `./`, `./.`: the workspace itself, said relatively. */
function isWorkspaceText(text: string): boolean {
  return !text.startsWith('/') && text.split('/').every((name) => name === '' || name === '.');
}
