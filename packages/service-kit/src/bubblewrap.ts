import path from 'node:path';

export interface BubblewrapConfinement {
  readonly workspaceRoot: string;
  /** Off: the process sees only its own loopback. */
  readonly network: boolean;
  /** Host paths to hide behind an empty tmpfs (e.g. the broker's data directory). */
  readonly hidePaths?: readonly string[];
}

/**
 * The bwrap flags every confined user process runs under: read-only root, the workspace
 * as the only writable path (mounted at its own path, so paths inside and outside agree),
 * private /tmp and /run, own pid, ipc and uts namespaces, network on or off by policy,
 * and death with the parent. The agent's launcher runs programs under them and the
 * broker's isolation probe runs `true` under them, so the probe proves exactly what the
 * launcher needs.
 */
export function bubblewrapConfinementArgs(options: BubblewrapConfinement): string[] {
  const workspace = path.resolve(options.workspaceRoot);
  return [
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
}
