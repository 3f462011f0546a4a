// Starting one sandbox's agent process as the local provider configures it: cgroups with the
// sandbox's limits, the launch chain (agent-command.ts) into the sandbox's view, the typed
// agent environment and the state directory handed over as a descriptor.
import { constants } from 'node:fs';
import { open, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { signingKeyFromBase64url } from '@sbx/tokens';
import { agentLaunchCommand } from './agent-command.js';
import { AGENT_INFO_FD, agentEnvironment, agentWorkspace } from './agent-environment.js';
import { AgentProcess } from './agent-process.js';
import { readinessToken } from './agent-readiness.js';
import type { LocalIsolation } from './isolation.js';
import type { LocalSettings } from './local-settings.js';
import type { SandboxPaths, SandboxRecord } from './sandbox-layout.js';
import { DEFAULT_SANDBOX_LIMITS } from './sandbox-limits.js';
import { hostTun, tunNodeFor, type ViewDevice } from './tun-device.js';

export async function spawnSandboxAgent(
  settings: LocalSettings,
  isolation: LocalIsolation,
  record: SandboxRecord,
  paths: SandboxPaths,
  port?: number,
): Promise<AgentProcess> {
  const limits = record.limits ?? DEFAULT_SANDBOX_LIMITS;
  const cgroups = (await settings.cgroups?.create(record.sandboxId, limits)) ?? [];
  const runAs = record.hostUid === undefined ? undefined : { uid: record.hostUid, gid: record.hostUid };
  const workspace = await realpath(paths.workspace);
  const view =
    isolation === 'none'
      ? undefined
      : {
          bwrapPath: settings.bwrapPath,
          workspace,
          hidePaths: settings.hiddenPaths,
          agentCode: settings.agentCode.hostDir,
          devices: record.network === 'on' ? await tunFor(paths, runAs) : [],
          runAs,
          infoFd: AGENT_INFO_FD,
        };
  // Opened by the broker, handed down as descriptor 3: the agent reads its key through it,
  // and no path to it exists in the agent's view.
  const stateDir = await open(paths.stateDir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    return new AgentProcess({
      command: agentLaunchCommand({
        agent: view === undefined ? settings.agentCode.hostCommand : settings.agentCode.viewCommand,
        limits,
        cgroupProcs: cgroups.map((dir) => path.join(dir, 'cgroup.procs')),
        view,
        runAs,
      }),
      env: agentEnvironment({
        record,
        workspace: agentWorkspace(isolation, workspace),
        isolation,
        bwrapPath: settings.bwrapPath,
        slirp4netnsPath: settings.slirp4netnsPath,
        logLevel: settings.agentLogLevel,
        allowedOrigins: settings.agentAllowedOrigins,
        introspectionUrl:
          typeof settings.agentIntrospectionUrl === 'function'
            ? settings.agentIntrospectionUrl()
            : settings.agentIntrospectionUrl,
        port,
      }),
      cwd: '/',
      sandboxId: record.sandboxId,
      logger: settings.logger,
      extraFds: [stateDir.fd, 'pipe'],
      ...(view === undefined ? {} : { infoFd: AGENT_INFO_FD }),
    });
  } finally {
    // The child holds its own copy now.
    await stateDir.close();
  }
}

/** The tun device a network-on sandbox's agent gives slirp4netns (tun-device.ts). */
async function tunFor(
  paths: SandboxPaths,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): Promise<ViewDevice[]> {
  const device =
    runAs === undefined ? await hostTun() : await tunNodeFor(path.join(paths.stateDir, 'net-tun'), runAs.gid);
  return device === undefined ? [] : [device];
}

/** The broker's health-probe tokens for this agent, signed with the key it was given. */
export async function readinessBearer(paths: SandboxPaths, record: SandboxRecord): Promise<() => string> {
  const key = signingKeyFromBase64url((await readFile(paths.keyFile, 'utf8')).trim());
  return () => readinessToken(key, record.sandboxId, record.tokenIssuer);
}

/** Where processes of the sandbox see the workspace: SANDBOX_WORKSPACE, or its host path unconfined. */
export async function workspacePathOf(isolation: LocalIsolation, paths: SandboxPaths): Promise<string> {
  return agentWorkspace(isolation, await realpath(paths.workspace));
}
