import type { AgentEnvVariables } from '@sbx/service-kit';
import { SANDBOX_WORKSPACE } from '@sbx/service-kit';
import type { LocalIsolation } from './isolation.js';
import type { SandboxRecord } from './sandbox-layout.js';

/** The descriptor of the sandbox's state directory in the agent (agent-launch.ts passes it). */
export const AGENT_STATE_FD = 3;
/** bwrap reports the agent's own pid on this descriptor (agent-process.ts reads it). */
export const AGENT_INFO_FD = 4;

export interface AgentEnvironmentInput {
  readonly record: SandboxRecord;
  /** The workspace as the agent sees it: SANDBOX_WORKSPACE in its view, its host path without one. */
  readonly workspace: string;
  readonly isolation: LocalIsolation;
  readonly bwrapPath: string;
  readonly slirp4netnsPath: string;
  readonly logLevel: string;
  /** Browser origins the agent allows (CORS and WebSocket upgrades); default none. */
  readonly allowedOrigins?: readonly string[];
  /** Opaque-token mode (D20): the agent asks this endpoint about every token. */
  readonly introspectionUrl?: string | undefined;
  /** The port to listen at (a restarted agent keeps its address); default: one it picks. */
  readonly port?: number | undefined;
}

/**
 * The agent's environment contract (services/agent/src/config.ts), built from nothing:
 * the key, the revocation list and the client's variables come through the state
 * directory's descriptor (never argv, env or a path in the agent's view); the agent
 * listens on loopback only, on a port it picks (or the one it had, restarted). It already runs as the sandbox's own
 * user in the sandbox's view (agent-view.ts), so user processes need no other identity.
 */
export function agentEnvironment(input: AgentEnvironmentInput): AgentEnvVariables {
  const { record } = input;
  const base: AgentEnvVariables = {
    SANDBOX_ID: record.sandboxId,
    AGENT_STATE_FD: String(AGENT_STATE_FD),
    SANDBOX_TOKEN_ISSUER: record.tokenIssuer,
    WORKSPACE_ROOT: input.workspace,
    HOST: '127.0.0.1',
    PORT: String(input.port ?? 0),
    LOG_LEVEL: input.logLevel,
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
    AGENT_SHARED_VIEW: 'true',
    AGENT_BWRAP_PATH: input.bwrapPath,
    AGENT_SLIRP4NETNS_PATH: input.slirp4netnsPath,
    AGENT_NETWORK: record.network === 'on' ? 'true' : 'false',
  };
}

/** Where the agent finds the workspace. */
export function agentWorkspace(isolation: LocalIsolation, hostWorkspace: string): string {
  return isolation === 'none' ? hostWorkspace : SANDBOX_WORKSPACE;
}
