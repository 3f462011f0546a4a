// The sandbox provider SANDBOX_PROVIDER names, opened with the configuration's settings:
// local processes (the default, and the one tested for real here), Docker containers or
// Kubernetes pods (docs/provider-docker.md, docs/provider-kubernetes.md).
import type { Logger } from '@sbx/service-kit';
import type { BrokerConfig } from '../config.js';
import { DockerProvider } from './docker/docker-provider.js';
import { KubernetesProvider } from './kubernetes/kubernetes-provider.js';
import { LocalProvider } from './local-provider.js';
import type { AgentExitListener, SandboxProvider } from './provider.js';

export interface ProviderContext {
  readonly logger: Logger;
  readonly onAgentExit: AgentExitListener;
  /** Opaque-token mode (D20): where agents reach POST /oauth/introspect. */
  readonly introspectionUrl: string | undefined;
}

type Opener = (config: BrokerConfig, context: ProviderContext) => Promise<SandboxProvider>;

const origins = (config: BrokerConfig) =>
  config.http === undefined ? {} : { agentAllowedOrigins: config.http.corsAllowedOrigins };

/** A Record: a new SANDBOX_PROVIDER value does not compile until it has an opener. */
const OPENERS: Readonly<Record<BrokerConfig['provider'], Opener>> = {
  local: (config, { logger, onAgentExit, introspectionUrl }) =>
    LocalProvider.open({
      dataDir: config.dataDir,
      logger,
      isolation: config.localIsolation,
      preallocateWorkspaces: config.localPreallocateWorkspaces,
      onAgentExit,
      agentAllowedOrigins: config.http?.corsAllowedOrigins,
      agentIntrospectionUrl: introspectionUrl,
    }),
  docker: (config, { logger }) =>
    DockerProvider.open({
      logger,
      image: config.containers?.image,
      dockerHost: config.containers?.docker.host,
      network: config.containers?.docker.network,
      internalNetwork: config.containers?.docker.internalNetwork,
      agentAddress: config.containers?.docker.agentAddress,
      ...origins(config),
    }),
  kubernetes: (config, { logger, onAgentExit, introspectionUrl }) => {
    const kube = config.containers?.kubernetes;
    return KubernetesProvider.open({
      logger,
      onAgentExit,
      image: config.containers?.image,
      namespace: kube?.namespace,
      mode: kube?.mode,
      kubeconfigPath: kube?.kubeconfigPath,
      sandboxTemplate: kube?.sandboxTemplate,
      runtimeClassName: kube?.runtimeClassName,
      storageClassName: kube?.storageClassName,
      agentIntrospectionUrl: introspectionUrl,
      ...origins(config),
    });
  },
};

export function openProvider(config: BrokerConfig, context: ProviderContext): Promise<SandboxProvider> {
  return OPENERS[config.provider](config, context);
}
