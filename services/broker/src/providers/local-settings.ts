import { mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '@sbx/service-kit';
import { customAgentCode, prepareAgentBundle, type AgentCode } from './agent-bundle.js';
import type { AgentCommand } from './agent-process.js';
import { DEFAULT_RESTART_POLICY, type RestartPolicy } from './agent-restarts.js';
import {
  resolveIsolation,
  type IsolationOption,
  type LocalIsolation,
  type ResolvedIsolation,
} from './isolation.js';
import type { DiskReserve } from './disk-budget.js';
import { detectCgroups, type SandboxCgroups } from './sandbox-cgroups.js';
import { PROBE_UID } from './sandbox-users.js';
import { detectWorkspaceVolumes, type WorkspaceVolumes } from './workspace-volumes.js';
import { providerUnavailable, type AgentExitListener } from './provider.js';
import { defaultConcurrentStarts } from './start-gate.js';
import { DEFAULT_UID_CLAIMS_DIR } from './host-uid-claims.js';

export interface LocalProviderOptions {
  /** Workspaces, keys and the agent bundle live here; hidden from user processes under bubblewrap. */
  readonly dataDir: string;
  readonly logger: Logger;
  /** `auto` (default): bubblewrap when it works here; `bubblewrap`: refuse to start without it. */
  readonly isolation?: IsolationOption;
  readonly bwrapPath?: string;
  /** The user-mode network stack of network-on sandboxes (default /usr/bin/slirp4netns). */
  readonly slirp4netnsPath?: string;
  /** Default: this repository's agent, bundled once into `<dataDir>/agent-bundle`. */
  readonly agentCommand?: AgentCommand;
  /** More host paths to hide from user processes (configuration, other secrets). */
  readonly hiddenPaths?: readonly string[];
  /** Until the agent announces its port and passes `/healthz` (default 15 s), from its spawn. */
  readonly startTimeoutMs?: number;
  /** Agents started at once; more wait their turn (start-gate.ts; default two per core). */
  readonly concurrentStarts?: number;
  /** Where a root broker claims its sandboxes' host uids, host-wide (host-uid-claims.ts). */
  readonly uidClaimsDir?: string;
  /** Between SIGTERM and SIGKILL when stopping an agent (default 5 s). */
  readonly stopGraceMs?: number;
  readonly agentLogLevel?: string;
  /** Browser origins the agents allow (CORS, WebSocket upgrades): the broker's CORS_ALLOWED_ORIGINS. */
  readonly agentAllowedOrigins?: readonly string[];
  /**
   * Opaque-token mode (D20): the broker's POST /oauth/introspect, which the agents then ask; a
   * function is asked at each agent start (a broker on port 0 knows its URL only once listening).
   */
  readonly agentIntrospectionUrl?: string | (() => string | undefined) | undefined;
  /** An agent that was running ended without being asked to (crash, OOM kill), and what was done. */
  readonly onAgentExit?: AgentExitListener;
  /** When a crashed agent is started again, and when it is given up on (agent-restarts.ts). */
  readonly restartPolicy?: Partial<RestartPolicy>;
  /** What the data directory's filesystem keeps free of workspace promises (default: disk-budget.ts). */
  readonly diskReserve?: DiskReserve;
  /** Workspace images take their whole size on the host when made (workspace-volumes.ts); default sparse. */
  readonly preallocateWorkspaces?: boolean;
}

/** The options with every default applied and every probe done. */
export interface LocalSettings {
  /** Symlink-free: bubblewrap mounts and the /proc sweep compare real paths. */
  readonly dataDir: string;
  readonly logger: Logger;
  readonly isolation: LocalIsolation;
  readonly bwrapPath: string;
  readonly slirp4netnsPath: string;
  /** Why network-on sandboxes are refused (no working user-mode network); undefined: allowed. */
  readonly networkRefusal: string | undefined;
  /** A root broker gives every sandbox its own unprivileged host user. */
  readonly sandboxUsers: boolean;
  /** A cgroup per sandbox when this host lets the broker make them; undefined: rlimits only. */
  readonly cgroups: SandboxCgroups | undefined;
  /** A workspace volume of bounded size per sandbox where the host allows; undefined: a plain directory. */
  readonly volumes: WorkspaceVolumes | undefined;
  /** The agent's code, bound into its view, and how to run it there or on the host. */
  readonly agentCode: AgentCode;

  readonly hiddenPaths: readonly string[];
  readonly startTimeoutMs: number;
  readonly concurrentStarts: number;
  readonly uidClaimsDir: string;
  readonly stopGraceMs: number;
  readonly agentLogLevel: string;
  readonly agentAllowedOrigins: readonly string[];
  readonly agentIntrospectionUrl: string | (() => string | undefined) | undefined;
  readonly onAgentExit: AgentExitListener | undefined;
  readonly restartPolicy: RestartPolicy;
  readonly diskReserve: DiskReserve | undefined;
}

export async function resolveLocalSettings(options: LocalProviderOptions): Promise<LocalSettings> {
  const extraHidden = (options.hiddenPaths ?? []).map((p) => path.resolve(p));
  // The agent takes hidden paths as one colon-separated variable.
  if ([options.dataDir, ...extraHidden].some((p) => p.includes(':')))
    throw providerUnavailable('the data directory and hidden paths must not contain ":"');
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const dataDir = await realpath(options.dataDir);
  const bwrapPath = options.bwrapPath ?? '/usr/bin/bwrap';
  const slirp4netnsPath = options.slirp4netnsPath ?? '/usr/bin/slirp4netns';
  const hiddenPaths = [...new Set([dataDir, ...extraHidden])];
  const sandboxUsers = process.getuid?.() === 0;
  if (sandboxUsers) await assertRunnableByOthers(process.execPath);
  const agentCode =
    options.agentCommand === undefined
      ? await prepareAgentBundle(dataDir)
      : await customAgentCode(dataDir, options.agentCommand);
  const resolved = await resolveIsolation(options.isolation ?? 'auto', {
    bwrapPath,
    slirp4netnsPath,
    dataDir,
    hiddenPaths,
    agentCode,
    ...(sandboxUsers ? { runAs: { uid: PROBE_UID, gid: PROBE_UID } } : {}),
  });
  const cgroups = sandboxUsers ? await detectCgroups() : undefined;
  logIsolation(options.logger, resolved, cgroups);
  return {
    dataDir,
    logger: options.logger,
    isolation: resolved.isolation,
    bwrapPath,
    slirp4netnsPath,
    networkRefusal:
      resolved.isolation === 'bubblewrap' && !resolved.userNetwork
        ? `sandboxes with network need a working user-mode network stack: ${resolved.userNetworkReason ?? 'unavailable'}`
        : undefined,
    sandboxUsers,
    cgroups,
    volumes: sandboxUsers
      ? detectWorkspaceVolumes({ preallocate: options.preallocateWorkspaces })
      : undefined,
    agentCode,
    // The real path only: a symlink to it leads into the hidden tmpfs anyway.
    hiddenPaths,
    startTimeoutMs: options.startTimeoutMs ?? 15_000,
    concurrentStarts: options.concurrentStarts ?? defaultConcurrentStarts(),
    uidClaimsDir: options.uidClaimsDir ?? DEFAULT_UID_CLAIMS_DIR,
    stopGraceMs: options.stopGraceMs ?? 5000,
    agentLogLevel: options.agentLogLevel ?? 'info',
    agentAllowedOrigins: options.agentAllowedOrigins ?? [],
    agentIntrospectionUrl: options.agentIntrospectionUrl,
    onAgentExit: options.onAgentExit,
    restartPolicy: { ...DEFAULT_RESTART_POLICY, ...options.restartPolicy },
    diskReserve: options.diskReserve,
  };
}

function logIsolation(
  logger: Logger,
  resolved: ResolvedIsolation,
  cgroups: SandboxCgroups | undefined,
): void {
  if (resolved.fallbackReason !== undefined)
    logger.warn(
      { reason: resolved.fallbackReason },
      'bubblewrap is unusable here: user processes run without namespaces',
    );
  if (resolved.isolation === 'bubblewrap' && !resolved.userNetwork)
    logger.warn(
      { reason: resolved.userNetworkReason },
      'no user-mode network: sandboxes whose policy allows network are refused',
    );
  logger.info(
    { limits: cgroups === undefined ? 'rlimits' : `cgroup ${cgroups.version} + rlimits` },
    'sandbox resource limits',
  );
}

/** The agent runs as each sandbox's own user: node must be executable by anyone. */
async function assertRunnableByOthers(file: string): Promise<void> {
  const dirs: string[] = [];
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) dirs.push(dir);
  const blocked: string[] = [];
  for (const dir of dirs) if (((await stat(dir)).mode & 0o001) === 0) blocked.push(dir);
  if (((await stat(file)).mode & 0o001) === 0) blocked.push(file);
  if (blocked.length > 0)
    throw providerUnavailable(
      `sandbox agents run as the sandbox's own user, who cannot run ${file}: ` +
        `${blocked.join(', ')} must be executable by others (install node system-wide)`,
    );
}

/**
 * Fails closed: without bubblewrap nothing takes the network away from user processes,
 * and without a user-mode network a network-on sandbox would have none or the host's.
 */
export function assertNetworkPolicy(settings: LocalSettings, network: 'on' | 'off'): void {
  if (network === 'off' && settings.isolation === 'none')
    throw providerUnavailable('network-off sandboxes need bubblewrap isolation, which this host lacks');
  if (network === 'on' && settings.networkRefusal !== undefined)
    throw providerUnavailable(settings.networkRefusal);
}
