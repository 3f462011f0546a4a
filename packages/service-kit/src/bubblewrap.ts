import path from 'node:path';

export interface BubblewrapConfinement {
  readonly workspaceRoot: string;
  /** Host paths to hide behind an empty tmpfs (e.g. the broker's data directory). */
  readonly hidePaths?: readonly string[];
  /**
   * Bind the host's devpts (programs inside may then open terminals of their own). Only
   * where every sandbox has a host user of its own: a terminal there is usable by its
   * owner alone, while sandboxes sharing one user could write to each other's shells.
   */
  readonly hostTerminals?: boolean;
}

/** Who user code is inside every sandbox: an ordinary user, never root (docs/security.md). */
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;

/**
 * Device nodes bound from the host one by one. `--dev /dev` would mount a devpts, which
 * makes bubblewrap map the caller to root in an outer user namespace and nest the real
 * one inside it; nsenter could then not join the sandbox's other namespaces, owned by
 * the outer one. A shell's own terminal needs no node here: it is inherited as stdio.
 */
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];
const TERMINAL_DEVICES = ['ptmx', 'pts'];

function deviceArgs(hostTerminals: boolean): string[] {
  const devices = hostTerminals ? [...DEVICES, ...TERMINAL_DEVICES] : DEVICES;
  return [
    '--tmpfs',
    '/dev',
    ...devices.flatMap((name) => ['--dev-bind', `/dev/${name}`, `/dev/${name}`]),
    ...[
      ['/proc/self/fd', '/dev/fd'],
      ['/proc/self/fd/0', '/dev/stdin'],
      ['/proc/self/fd/1', '/dev/stdout'],
      ['/proc/self/fd/2', '/dev/stderr'],
    ].flatMap(([target = '', link = '']) => ['--symlink', target, link]),
    '--tmpfs',
    '/dev/shm',
  ];
}

/**
 * The bwrap flags of a sandbox's namespaces, held open by one long-lived process that
 * every user process later joins: its own user namespace in which user code is
 * SANDBOX_UID with no capabilities (bwrap must run as the sandbox's unprivileged host
 * user: started by root, the namespace's user would be host root for file permissions),
 * its own pid, ipc, uts and network namespaces (loopback only until a user-mode network
 * stack is attached), a read-only root with the workspace as the only writable host path
 * (mounted at its own path, so paths inside and outside agree), private /tmp and /run,
 * the hidden paths behind empty tmpfs mounts, and death with the parent. The agent's
 * launcher and the broker's isolation probe both use exactly these flags.
 */
export function bubblewrapConfinementArgs(options: BubblewrapConfinement): string[] {
  const workspace = path.resolve(options.workspaceRoot);
  return [
    '--unshare-user',
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_GID),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-net',
    '--hostname',
    'sandbox',
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/',
    '/',
    ...deviceArgs(options.hostTerminals ?? false),
    '--proc',
    '/proc',
    // The host's cgroup tree would list every sandbox on the host and its usage.
    '--tmpfs',
    '/sys/fs/cgroup',
    '--tmpfs',
    '/tmp',
    '--tmpfs',
    '/run',
    ...(options.hidePaths ?? []).flatMap((hidden) => ['--tmpfs', path.resolve(hidden)]),
    '--bind',
    workspace,
    workspace,
    '--die-with-parent',
    '--new-session',
  ];
}
