// Reading a container's inspection: what state the sandbox is in and where its agent listens.
import type Docker from 'dockerode';
import type { ProviderSandboxStatus } from '../provider.js';
import type { DockerSettings } from './docker-settings.js';

type ContainerState = Docker.ContainerInspectInfo['State'];

/**
 * The engine's view of the sandbox container, before its agent is asked: `exited` is a suspended
 * sandbox (the workspace stays) unless the kernel killed it for memory; `running` still has to
 * pass its health check (the provider asks, see docker-provider.ts).
 */
export function containerStatus(state: ContainerState | undefined): ProviderSandboxStatus {
  if (state === undefined) return 'missing';
  switch (state.Status) {
    case 'running':
      return 'running';
    case 'restarting':
      return 'starting';
    case 'created':
    case 'exited':
      return state.OOMKilled ? 'failed' : 'stopped';
    case 'removing':
      return 'missing';
    default:
      // dead, paused (the provider never pauses) or a state this code does not know.
      return 'failed';
  }
}

/** Why a container that should have run did not: exit code and OOM kill, never its output. */
export function describeExit(state: ContainerState | undefined): string {
  if (state === undefined) return 'the container is gone';
  if (state.Running) return 'the container runs but its agent did not answer';
  const oom = state.OOMKilled ? ', killed for lack of memory' : '';
  return `the container ${state.Status} with code ${state.ExitCode}${oom}`;
}

/**
 * `http://host:port` of the agent: the container's IP on its network and the agent's own port,
 * or the port the engine published on 127.0.0.1; undefined while the engine has neither.
 */
export function agentUrlOf(info: Docker.ContainerInspectInfo, settings: DockerSettings): string | undefined {
  if (settings.agentAddress === 'published') {
    const binding = info.NetworkSettings.Ports[`${settings.agentPort}/tcp`]?.find((b) => b.HostPort !== '');
    return binding === undefined ? undefined : `http://127.0.0.1:${binding.HostPort}`;
  }
  const networks = info.NetworkSettings.Networks;
  const ip = [networks[settings.network], networks[settings.internalNetwork]].find(
    (network) => network !== undefined && network.IPAddress !== '',
  )?.IPAddress;
  return ip === undefined ? undefined : `http://${ip.includes(':') ? `[${ip}]` : ip}:${settings.agentPort}`;
}

/** The value of `NAME=` in a container's environment (not secrets: the key never goes there). */
export function envValueOf(info: Docker.ContainerInspectInfo, name: string): string | undefined {
  const prefix = `${name}=`;
  return info.Config.Env.find((entry) => entry.startsWith(prefix))?.slice(prefix.length);
}
