// The Docker provider's settings (the broker's DOCKER_* and SANDBOX_IMAGE variables) with
// their defaults, and how DOCKER_HOST becomes dockerode's connection options.
import type Docker from 'dockerode';
import type { Logger } from '@sbx/service-kit';
import { providerUnavailable } from '../provider.js';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../sandbox-limits.js';

export type AgentAddress = 'container' | 'published';

export interface DockerProviderOptions {
  readonly logger: Logger;
  /** DOCKER_HOST: `unix:///var/run/docker.sock` (default) or `tcp://host:port` (plain HTTP). */
  readonly dockerHost?: string;
  /** SANDBOX_IMAGE: the agent image (default `sbx-agent:latest`); never pulled by the provider. */
  readonly image?: string;
  /** Template name → image; a sandbox made from any other template gets `image`. */
  readonly templateImages?: Readonly<Record<string, string>>;
  /** DOCKER_NETWORK: the user-defined bridge of network-on sandboxes (default `sbx-sandboxes`). */
  readonly network?: string;
  /** DOCKER_INTERNAL_NETWORK: the `--internal` bridge of network-off sandboxes (default `sbx-internal`). */
  readonly internalNetwork?: string;
  /** DOCKER_AGENT_ADDRESS: the container's IP on its network (default) or a port published on 127.0.0.1. */
  readonly agentAddress?: AgentAddress;
  /** The port the agent listens on inside its container (default 8080, the image contract's PORT). */
  readonly agentPort?: number;
  /** Until the container runs and its agent passes `/healthz` (default 30 s: an image may be cold). */
  readonly startTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL when stopping a container (default 5 s). */
  readonly stopGraceSeconds?: number;
  readonly agentLogLevel?: string;
  /** Browser origins the agents allow (CORS, WebSocket upgrades): the broker's CORS_ALLOWED_ORIGINS. */
  readonly agentAllowedOrigins?: readonly string[];
  /** The sidecar's own limits (the sandbox's limits are the user's, not its credential broker's). */
  readonly sidecarLimits?: Pick<SandboxLimits, 'maxProcesses' | 'memoryBytes' | 'cpuMillicores'>;
}

export interface DockerSettings {
  readonly logger: Logger;
  readonly connection: Docker.DockerOptions;
  readonly image: string;
  readonly templateImages: Readonly<Record<string, string>>;
  readonly network: string;
  readonly internalNetwork: string;
  readonly agentAddress: AgentAddress;
  readonly agentPort: number;
  readonly startTimeoutMs: number;
  readonly stopGraceSeconds: number;
  readonly agentLogLevel: string;
  readonly agentAllowedOrigins: readonly string[];
  readonly sidecarLimits: Pick<SandboxLimits, 'maxProcesses' | 'memoryBytes' | 'cpuMillicores'>;
}

export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';

const DEFAULT_SIDECAR_LIMITS = { maxProcesses: 64, memoryBytes: 256 * 1024 ** 2, cpuMillicores: 250 };

export function resolveDockerSettings(options: DockerProviderOptions): DockerSettings {
  return {
    logger: options.logger,
    connection: dockerConnection(options.dockerHost ?? DEFAULT_DOCKER_HOST),
    image: options.image ?? 'sbx-agent:latest',
    templateImages: options.templateImages ?? {},
    network: options.network ?? 'sbx-sandboxes',
    internalNetwork: options.internalNetwork ?? 'sbx-internal',
    agentAddress: options.agentAddress ?? 'container',
    agentPort: options.agentPort ?? 8080,
    startTimeoutMs: options.startTimeoutMs ?? 30_000,
    stopGraceSeconds: options.stopGraceSeconds ?? 5,
    agentLogLevel: options.agentLogLevel ?? 'info',
    agentAllowedOrigins: options.agentAllowedOrigins ?? [],
    sidecarLimits: options.sidecarLimits ?? DEFAULT_SIDECAR_LIMITS,
  };
}

/** `unix:///path` or `tcp://host:port`; anything else is refused rather than guessed at. */
export function dockerConnection(dockerHost: string): Docker.DockerOptions {
  if (dockerHost.startsWith('unix://')) {
    const socketPath = dockerHost.slice('unix://'.length);
    if (socketPath.startsWith('/')) return { socketPath };
  } else if (dockerHost.startsWith('tcp://')) {
    const url = new URL(`http://${dockerHost.slice('tcp://'.length)}`);
    if (url.hostname !== '' && url.port !== '')
      return { protocol: 'http', host: url.hostname, port: url.port };
  }
  throw providerUnavailable('DOCKER_HOST must be unix:///path/to/socket or tcp://host:port');
}

export function imageFor(settings: DockerSettings, template: string | undefined): string {
  return (template === undefined ? undefined : settings.templateImages[template]) ?? settings.image;
}

export function limitsOr(limits: SandboxLimits | undefined): SandboxLimits {
  return limits ?? DEFAULT_SANDBOX_LIMITS;
}

/**
 * The engine publishes no ports of a container on an internal network: a broker that reaches
 * agents by published port cannot reach a network-off sandbox, so it is refused before anything
 * is made rather than left to time out (run the broker on the networks, DOCKER_AGENT_ADDRESS=container).
 */
export function assertReachable(settings: DockerSettings, network: 'on' | 'off'): void {
  if (network === 'off' && settings.agentAddress === 'published')
    throw providerUnavailable(
      'network-off sandboxes need DOCKER_AGENT_ADDRESS=container: the engine publishes no ports on an internal network',
    );
}
