// Starting one sandbox's agent process as the local provider configures it: cgroups with the
// sandbox's limits, the launch command and the typed agent environment.
import { readFile, realpath } from 'node:fs/promises';
import { SANDBOX_WORKSPACE } from '@sbx/service-kit';
import { signingKeyFromBase64url } from '@sbx/tokens';
import { agentLaunchCommand } from './agent-command.js';
import { agentEnvironment } from './agent-environment.js';
import { AgentProcess } from './agent-process.js';
import { readinessToken } from './agent-readiness.js';
import type { LocalIsolation } from './isolation.js';
import type { LocalSettings } from './local-settings.js';
import type { SandboxPaths, SandboxRecord } from './sandbox-layout.js';
import { DEFAULT_SANDBOX_LIMITS } from './sandbox-limits.js';

export async function spawnSandboxAgent(
  settings: LocalSettings,
  isolation: LocalIsolation,
  record: SandboxRecord,
  paths: SandboxPaths,
): Promise<AgentProcess> {
  const limits = record.limits ?? DEFAULT_SANDBOX_LIMITS;
  const cgroups = (await settings.cgroups?.create(record.sandboxId, limits)) ?? [];
  return new AgentProcess({
    command: agentLaunchCommand(settings.command, limits),
    env: agentEnvironment({
      record,
      paths,
      isolation,
      bwrapPath: settings.bwrapPath,
      slirp4netnsPath: settings.slirp4netnsPath,
      hiddenPaths: settings.hiddenPaths,
      cgroups,
      logLevel: settings.agentLogLevel,
      allowedOrigins: settings.agentAllowedOrigins,
      introspectionUrl:
        typeof settings.agentIntrospectionUrl === 'function'
          ? settings.agentIntrospectionUrl()
          : settings.agentIntrospectionUrl,
    }),
    cwd: paths.stateDir,
    sandboxId: record.sandboxId,
    logger: settings.logger,
  });
}

/** The broker's health-probe tokens for this agent, signed with the key it was given. */
export async function readinessBearer(paths: SandboxPaths, record: SandboxRecord): Promise<() => string> {
  const key = signingKeyFromBase64url((await readFile(paths.keyFile, 'utf8')).trim());
  return () => readinessToken(key, record.sandboxId, record.tokenIssuer);
}

/** The agent realpaths its workspace; unconfined processes see exactly that path. */
export async function workspacePathOf(isolation: LocalIsolation, paths: SandboxPaths): Promise<string> {
  return isolation === 'none' ? realpath(paths.workspace) : SANDBOX_WORKSPACE;
}
