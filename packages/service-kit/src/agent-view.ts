import path from 'node:path';
import {
  AGENT_CODE_DIR,
  OWN_TOP_LEVEL,
  readHostRoot,
  rootArgs,
  SANDBOX_WORKSPACE,
  type HostRootEntry,
} from './bubblewrap.js';

/** A program and its arguments (argv is world-readable: never secrets). */
export interface ViewCommand {
  readonly file: string;
  readonly args: readonly string[];
}

export interface AgentViewOptions {
  readonly bwrapPath: string;
  /** The workspace's host path, bound at SANDBOX_WORKSPACE. */
  readonly workspace: string;
  /** Host paths covered by empty tmpfs mounts: the broker's data directory, the operator's. */
  readonly hidePaths: readonly string[];
  /** The host directory of the agent's code, bound read-only at AGENT_CODE_DIR. */
  readonly agentCode: string;
  /** Device nodes bound in (host path → path in the view), e.g. a tun node for slirp4netns. */
  readonly devices?: readonly { readonly host: string; readonly inside: string }[];
  /**
   * A root caller: setpriv first drops to this user with no capability at all, and that
   * user builds the view (bubblewrap, in a user namespace of its own): nothing of root's
   * lasts past the launch, not even bubblewrap's waiting parent.
   */
  readonly runAs?: { readonly uid: number; readonly gid: number };
  /** bwrap writes `{"child-pid": …}` here: the agent's own pid, which stop signals. */
  readonly infoFd?: number;
  readonly hostRoot?: readonly HostRootEntry[];
}

const SETPRIV = '/usr/bin/setpriv';

/**
 * The bwrap flags of the agent's view: the filesystem exactly as the sandbox's user
 * processes see it (bubblewrap.ts, `sharedView`), which the agent's holder then shares
 * with them — a read-only root of the host's top-level entries, the workspace at
 * SANDBOX_WORKSPACE, a `/tmp`, `/run` and `/dev/shm` of the sandbox's own, a devpts
 * instance of its own (`--dev`), the hidden paths covered — plus what only the agent
 * needs: the host's `/proc` (the agent stays in the host's pid namespace, invisible to
 * user code; the file API refuses `/proc`) and its code at AGENT_CODE_DIR. The network
 * and pid namespaces stay the host's: the agent listens on a host port.
 */
export function agentViewArgs(options: AgentViewOptions): string[] {
  // A path under a directory the view makes its own (/tmp …) is not there to hide.
  const hidden = options.hidePaths
    .map((hide) => path.resolve(hide))
    .filter((hide) => !OWN_TOP_LEVEL.has(hide.split('/')[1] ?? ''))
    .flatMap((hide) => ['--tmpfs', hide]);
  // bwrap would make a missing parent (/dev/net) root's alone: made traversable first.
  const devices = (options.devices ?? []).flatMap((device) => [
    ...(path.dirname(device.inside) === '/dev'
      ? []
      : ['--perms', '0755', '--dir', path.dirname(device.inside)]),
    '--dev-bind',
    device.host,
    device.inside,
  ]);
  return [
    '--unshare-user',
    '--cap-drop',
    'ALL',
    ...rootArgs(options.hostRoot ?? readHostRoot()),
    // Read-write: the holder's bwrap writes its uid map through it (only the agent's own
    // processes are writable to it there, as anywhere).
    '--bind',
    '/proc',
    '/proc',
    '--dev',
    '/dev',
    ...devices,
    ...['/dev/shm', '/tmp', '/run'].flatMap((dir) => ['--perms', '01777', '--tmpfs', dir]),
    // The host's cgroup tree would list every sandbox on the host and its usage.
    '--tmpfs',
    '/sys/fs/cgroup',
    ...hidden,
    '--ro-bind',
    path.resolve(options.agentCode),
    AGENT_CODE_DIR,
    '--bind',
    path.resolve(options.workspace),
    SANDBOX_WORKSPACE,
    '--remount-ro',
    '/',
    '--chdir',
    '/',
    ...(options.infoFd === undefined ? [] : ['--info-fd', String(options.infoFd)]),
  ];
}

/**
 * `command` run in the agent's view, built by the sandbox's own host user when the caller
 * is root (`runAs`): no capability in any set, no way to gain one (`--no-new-privs`), no
 * supplementary group of root's.
 */
export function agentViewCommand(options: AgentViewOptions, command: ViewCommand): ViewCommand {
  const view = {
    file: options.bwrapPath,
    args: [...agentViewArgs(options), '--', command.file, ...command.args],
  };
  return options.runAs === undefined ? view : asUser(options.runAs, view);
}

/** `command` run by root as `user`, through setpriv, with nothing left of root's powers. */
export function asUser(
  user: { readonly uid: number; readonly gid: number },
  command: ViewCommand,
): ViewCommand {
  return {
    file: SETPRIV,
    args: [
      '--reuid',
      String(user.uid),
      '--regid',
      String(user.gid),
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
      command.file,
      ...command.args,
    ],
  };
}
