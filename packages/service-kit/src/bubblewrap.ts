import { readdirSync, readlinkSync, type Dirent } from 'node:fs';
import path from 'node:path';

export interface BubblewrapConfinement {
  readonly workspaceRoot: string;
  /** Host paths to hide behind an empty tmpfs (e.g. the broker's data directory). */
  readonly hidePaths?: readonly string[];
  /**
   * The caller (the agent) runs in the sandbox's own view (agent-view.ts), so user
   * processes share its `/tmp`, `/run`, `/dev/shm` and its devpts instance, and every
   * path means the same to the file API and to a shell. Without it (an agent started
   * alone: tests, development) the sandbox gets its own `/tmp`, `/run` and `/dev/shm`
   * and no terminals of its own making.
   */
  readonly sharedView?: boolean;
  /** The host's top-level entries the root is built from; default: read from `/` now. */
  readonly hostRoot?: readonly HostRootEntry[];
}

/** One entry of the host's `/`: bound read-only (a directory or file) or recreated (a symlink). */
export type HostRootEntry =
  | { readonly name: string; readonly kind: 'bind' }
  | { readonly name: string; readonly kind: 'symlink'; readonly target: string };

/** Where the workspace is for every process of a confined sandbox (docs/architecture.md D17). */
export const SANDBOX_WORKSPACE = '/workspace';

/** Where the agent's own code is bound in its view (agent-view.ts); an empty directory to user code. */
export const AGENT_CODE_DIR = '/run/sbx-agent';

/** Top-level names the sandbox gets its own of (or none at all), never the host's. */
export const OWN_TOP_LEVEL: ReadonlySet<string> = new Set([
  'proc',
  'dev',
  'tmp',
  'run',
  SANDBOX_WORKSPACE.slice(1),
]);

function entryOf(dirent: Dirent): HostRootEntry {
  if (dirent.isSymbolicLink()) {
    return { name: dirent.name, kind: 'symlink', target: readlinkSync(`/${dirent.name}`) };
  }
  return { name: dirent.name, kind: 'bind' };
}

/** The host's `/`, minus what every sandbox has its own of. */
export function readHostRoot(): HostRootEntry[] {
  return readdirSync('/', { withFileTypes: true })
    .filter((dirent) => !OWN_TOP_LEVEL.has(dirent.name))
    .filter((dirent) => dirent.isDirectory() || dirent.isFile() || dirent.isSymbolicLink())
    .map(entryOf);
}

/**
 * A root of the host's top-level entries, read-only, on bubblewrap's own tmpfs root:
 * binding the host's `/` whole would leave no place to mount the workspace at
 * SANDBOX_WORKSPACE (a read-only bind cannot get a new mount point).
 */
export function rootArgs(entries: readonly HostRootEntry[]): string[] {
  return entries
    .filter((entry) => !OWN_TOP_LEVEL.has(entry.name))
    .flatMap((entry) =>
      entry.kind === 'symlink'
        ? ['--symlink', entry.target, `/${entry.name}`]
        : ['--ro-bind', `/${entry.name}`, `/${entry.name}`],
    );
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

/**
 * In the shared view the agent's devpts is a new instance of the sandbox's own
 * (agent-view.ts): user code opens terminals of its own (`/dev/ptmx`: tmux, `script`,
 * `pty.openpty`) and sees no other sandbox's nor the host's.
 */
function deviceArgs(sharedView: boolean): string[] {
  const terminals = sharedView
    ? ['--dev-bind', '/dev/pts', '/dev/pts', '--symlink', 'pts/ptmx', '/dev/ptmx']
    : [];
  return [
    '--tmpfs',
    '/dev',
    ...DEVICES.flatMap((name) => ['--dev-bind', `/dev/${name}`, `/dev/${name}`]),
    ...terminals,
    ...[
      ['/proc/self/fd', '/dev/fd'],
      ['/proc/self/fd/0', '/dev/stdin'],
      ['/proc/self/fd/1', '/dev/stdout'],
      ['/proc/self/fd/2', '/dev/stderr'],
    ].flatMap(([target = '', link = '']) => ['--symlink', target, link]),
    ...(sharedView ? ['--bind', '/dev/shm', '/dev/shm'] : ['--tmpfs', '/dev/shm']),
  ];
}

/** The sandbox's scratch space: the agent's own in the shared view, fresh ones otherwise. */
function scratchArgs(sharedView: boolean): string[] {
  if (!sharedView) return ['--tmpfs', '/tmp', '--tmpfs', '/run'];
  return ['--bind', '/tmp', '/tmp', '--bind', '/run', '/run', '--tmpfs', AGENT_CODE_DIR];
}

/**
 * The bwrap flags of a sandbox's namespaces, held open by one long-lived process that
 * every user process later joins: its own user namespace in which user code is
 * SANDBOX_UID with no capabilities (bwrap must run as the sandbox's unprivileged host
 * user: started by root, the namespace's user would be host root for file permissions),
 * its own pid, ipc, uts and network namespaces (loopback only until a user-mode network
 * stack is attached), a read-only root with the workspace as the only writable host path,
 * mounted where the agent sees it (SANDBOX_WORKSPACE in the shared view; its own path for
 * an agent started alone, so exec's and the file API's paths agree), /tmp and /run shared
 * by every process that joins (and by
 * the agent, in the shared view),
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
    ...rootArgs(options.hostRoot ?? readHostRoot()),
    ...deviceArgs(options.sharedView ?? false),
    '--proc',
    '/proc',
    // The host's cgroup tree would list every sandbox on the host and its usage.
    '--tmpfs',
    '/sys/fs/cgroup',
    ...scratchArgs(options.sharedView ?? false),
    ...(options.hidePaths ?? []).flatMap((hidden) => ['--tmpfs', path.resolve(hidden)]),
    '--bind',
    workspace,
    workspace,
    // Last: the root tmpfs itself takes no new files; /tmp, /run and the workspace stay writable.
    '--remount-ro',
    '/',
    '--die-with-parent',
    '--new-session',
  ];
}
