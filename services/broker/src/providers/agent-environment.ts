import type { LocalIsolation } from './isolation.js';
import type { SandboxRecord, SandboxPaths } from './sandbox-layout.js';

export interface AgentEnvironmentInput {
  readonly record: SandboxRecord;
  readonly paths: SandboxPaths;
  readonly isolation: LocalIsolation;
  readonly bwrapPath: string;
  /** Host paths user processes must not see: the broker's data directory and whatever the operator adds. */
  readonly hiddenPaths: readonly string[];
  readonly logLevel: string;
}

/**
 * The agent's environment contract (services/agent/src/config.ts), built from nothing:
 * the key goes by file (never argv or env), the agent listens on loopback only, on a
 * port it picks. Under bubblewrap the hidden paths become empty tmpfs mounts before the
 * workspace is bound back in, so the workspace stays visible inside the hidden data dir.
 */
export function agentEnvironment(input: AgentEnvironmentInput): Record<string, string> {
  const { record, paths } = input;
  const base: Record<string, string> = {
    SANDBOX_ID: record.sandboxId,
    SANDBOX_SIGNING_KEY_FILE: paths.keyFile,
    SANDBOX_TOKEN_ISSUER: record.tokenIssuer,
    WORKSPACE_ROOT: paths.workspace,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: input.logLevel,
  };
  if (input.isolation === 'none') return { ...base, AGENT_LAUNCHER: 'direct' };
  return {
    ...base,
    AGENT_LAUNCHER: 'bubblewrap',
    AGENT_BWRAP_PATH: input.bwrapPath,
    AGENT_NETWORK: record.network === 'on' ? 'true' : 'false',
    AGENT_HIDE_PATHS: input.hiddenPaths.join(':'),
  };
}
