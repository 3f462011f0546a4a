import type { AgentEnvVariables } from '@sbx/service-kit';
import type { LocalIsolation } from './isolation.js';
import type { SandboxRecord, SandboxPaths } from './sandbox-layout.js';

export interface AgentEnvironmentInput {
  readonly record: SandboxRecord;
  readonly paths: SandboxPaths;
  readonly isolation: LocalIsolation;
  readonly bwrapPath: string;
  readonly slirp4netnsPath: string;
  /** Host paths user processes must not see: the broker's data directory and whatever the operator adds. */
  readonly hiddenPaths: readonly string[];
  /** The sandbox's cgroup directories, which the agent joins before it starts anything. */
  readonly cgroups: readonly string[];
  readonly logLevel: string;
  /** Browser origins the agent allows (CORS and WebSocket upgrades); default none. */
  readonly allowedOrigins?: readonly string[];
  /** Opaque-token mode (D20): the agent asks this endpoint about every token. */
  readonly introspectionUrl?: string | undefined;
}

/**
 * The agent's environment contract (services/agent/src/config.ts), built from nothing:
 * the key goes by file (never argv or env), the agent listens on loopback only, on a
 * port it picks. User processes run as the sandbox's own host user when it has one
 * (a root broker), never as the agent's. Under bubblewrap the hidden paths become empty
 * tmpfs mounts before the workspace is bound back in.
 */
export function agentEnvironment(input: AgentEnvironmentInput): AgentEnvVariables {
  const { record, paths } = input;
  const base: AgentEnvVariables = {
    SANDBOX_ID: record.sandboxId,
    SANDBOX_SIGNING_KEY_FILE: paths.keyFile,
    SANDBOX_TOKEN_ISSUER: record.tokenIssuer,
    AGENT_SANDBOX_ENV_FILE: paths.envFile,
    WORKSPACE_ROOT: paths.workspace,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: input.logLevel,
    ...(record.hostUid === undefined
      ? {}
      : { AGENT_RUN_AS_UID: String(record.hostUid), AGENT_RUN_AS_GID: String(record.hostUid) }),
    ...(input.cgroups.length === 0 ? {} : { AGENT_CGROUPS: input.cgroups.join(':') }),
    ...(input.allowedOrigins === undefined || input.allowedOrigins.length === 0
      ? {}
      : { CORS_ALLOWED_ORIGINS: input.allowedOrigins.join(',') }),
    ...(input.introspectionUrl === undefined
      ? {}
      : { AGENT_TOKEN_FORMAT: 'opaque', AGENT_INTROSPECTION_URL: input.introspectionUrl }),
  };
  if (input.isolation === 'none') return { ...base, AGENT_LAUNCHER: 'direct' };
  return {
    ...base,
    AGENT_LAUNCHER: 'bubblewrap',
    AGENT_BWRAP_PATH: input.bwrapPath,
    AGENT_SLIRP4NETNS_PATH: input.slirp4netnsPath,
    AGENT_NETWORK: record.network === 'on' ? 'true' : 'false',
    AGENT_HIDE_PATHS: input.hiddenPaths.join(':'),
  };
}
