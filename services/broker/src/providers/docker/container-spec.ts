// The dockerode create options of a sandbox's containers, as pure functions of the spec and the
// settings: what the engine is asked for is readable (and tested) in one place.
import type Docker from 'dockerode';
import type { AgentEnvVariables } from '@sbx/service-kit';
import type { SandboxSpec, SidecarSpec } from '../provider.js';
import type { SandboxLimits } from '../sandbox-limits.js';
import { imageFor, limitsOr, type DockerSettings } from './docker-settings.js';
import {
  AGENT_CONTAINER_CAPABILITIES,
  AGENT_CONTAINER_USER,
  KEY_FILE_NAME,
  RUN_DIR,
  SANDBOX_ENV_FILE_NAME,
  SANDBOX_UID,
  SIDECAR_RUN_DIR,
  SIDECAR_TOKEN_FILE_NAME,
  WORKSPACE_DIR,
  sandboxLabels,
  sandboxNames,
} from './docker-names.js';

type CreateOptions = Docker.ContainerCreateOptions;
type ProcessLimits = Pick<SandboxLimits, 'maxProcesses' | 'memoryBytes' | 'cpuMillicores'>;

/** The agent's variables, plus the one the agent is gaining now (the client policy's environment). */
type SandboxAgentEnv = AgentEnvVariables & { readonly AGENT_SANDBOX_ENV_FILE: string };

/**
 * What every sandbox container gets (docs/provider-docker.md#hardening): no capabilities, no
 * privilege gain, Docker's default seccomp profile (never `unconfined`), a read-only root with
 * writable mounts only where the image contract says, and cgroup limits. The user and the one
 * exception to "no capabilities" (the agent container's setpriv) are each container's own.
 */
function hardenedHostConfig(limits: ProcessLimits, mounts: Docker.MountConfig): Docker.HostConfig {
  return {
    ReadonlyRootfs: true,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges:true'],
    Privileged: false,
    IpcMode: 'private',
    PidsLimit: limits.maxProcesses,
    Memory: limits.memoryBytes,
    // No swap beyond the memory limit: the limit is what the sandbox gets.
    MemorySwap: limits.memoryBytes,
    NanoCpus: limits.cpuMillicores * 1_000_000,
    Tmpfs: { '/tmp': 'rw,nosuid,nodev' },
    Mounts: mounts,
    RestartPolicy: { Name: 'no', MaximumRetryCount: 0 },
  };
}

/** Made by the engine at container create, labelled like the containers (list() finds leftovers). */
function volumeMount(
  source: string,
  target: string,
  noCopy: boolean,
  labels: Record<string, string>,
): Docker.MountSettings {
  return {
    Type: 'volume',
    Source: source,
    Target: target,
    // NoCopy: the key directory starts empty and root-owned, whatever the image has there.
    VolumeOptions: { NoCopy: noCopy, Labels: labels, DriverConfig: { Name: 'local', Options: {} } },
  };
}

function agentEnv(spec: SandboxSpec, settings: DockerSettings): string[] {
  const env: SandboxAgentEnv = {
    SANDBOX_ID: spec.sandboxId,
    SANDBOX_TOKEN_ISSUER: spec.tokenIssuer,
    SANDBOX_SIGNING_KEY_FILE: `${RUN_DIR}/${KEY_FILE_NAME}`,
    WORKSPACE_ROOT: WORKSPACE_DIR,
    HOST: '0.0.0.0',
    PORT: String(settings.agentPort),
    AGENT_LAUNCHER: 'direct',
    LOG_LEVEL: settings.agentLogLevel,
    AGENT_SANDBOX_ENV_FILE: `${RUN_DIR}/${SANDBOX_ENV_FILE_NAME}`,
    ...(settings.agentAllowedOrigins.length === 0
      ? {}
      : { CORS_ALLOWED_ORIGINS: settings.agentAllowedOrigins.join(',') }),
  };
  return [...Object.entries(env).map(([name, value]) => `${name}=${value}`), `HOME=${WORKSPACE_DIR}`];
}

/** The sandbox's own container: the agent and every user process. */
export function sandboxContainerSpec(spec: SandboxSpec, settings: DockerSettings): CreateOptions {
  const names = sandboxNames(spec.sandboxId);
  const limits = limitsOr(spec.limits);
  const port = `${settings.agentPort}/tcp`;
  const labels = sandboxLabels(spec.sandboxId, spec.tenantId, 'agent');
  const hostConfig = hardenedHostConfig(limits, [
    // Not NoCopy: a new volume takes the image's /workspace, owned by the user (1000:1000).
    volumeMount(names.workspaceVolume, WORKSPACE_DIR, false, labels),
    volumeMount(names.runVolume, RUN_DIR, true, labels),
  ]);
  return {
    name: names.container,
    Image: imageFor(settings, spec.template),
    // Root with CAP_SETUID and CAP_SETGID alone: the image's entrypoint (setpriv) gives the agent
    // its own real ids and the user's effective ones, and the kernel then clears both (D22).
    User: AGENT_CONTAINER_USER,
    Env: agentEnv(spec, settings),
    Labels: labels,
    WorkingDir: WORKSPACE_DIR,
    ExposedPorts: { [port]: {} },
    HostConfig: {
      ...hostConfig,
      CapAdd: [...AGENT_CONTAINER_CAPABILITIES],
      Ulimits: [{ Name: 'fsize', Soft: limits.maxFileBytes, Hard: limits.maxFileBytes }],
      // Network-off sandboxes join an internal network: no egress, yet the broker reaches the agent.
      NetworkMode: spec.network === 'on' ? settings.network : settings.internalNetwork,
      ...(settings.agentAddress === 'published'
        ? { PortBindings: { [port]: [{ HostIp: '127.0.0.1', HostPort: '' }] } }
        : {}),
    },
  };
}

/**
 * The client's credential broker: the sandbox's network namespace (so the user code reaches it on
 * localhost), its token in a volume of its own that the sandbox container never mounts.
 */
export function sidecarContainerSpec(
  spec: SandboxSpec,
  sidecar: SidecarSpec,
  sandboxContainerId: string,
  settings: DockerSettings,
): CreateOptions {
  const names = sandboxNames(spec.sandboxId);
  const labels = sandboxLabels(spec.sandboxId, spec.tenantId, 'sidecar');
  return {
    name: names.sidecar,
    Image: sidecar.image,
    User: `${SANDBOX_UID}:${SANDBOX_UID}`,
    Env: [
      `SANDBOX_ID=${spec.sandboxId}`,
      `SBX_SIDECAR_TOKEN_FILE=${SIDECAR_RUN_DIR}/${SIDECAR_TOKEN_FILE_NAME}`,
    ],
    Labels: labels,
    HostConfig: {
      ...hardenedHostConfig(settings.sidecarLimits, [
        volumeMount(names.sidecarVolume, SIDECAR_RUN_DIR, true, labels),
      ]),
      NetworkMode: `container:${sandboxContainerId}`,
    },
  };
}
