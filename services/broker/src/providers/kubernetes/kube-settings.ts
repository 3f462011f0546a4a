import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '@sbx/service-kit';
import { providerUnavailable, type AgentExitListener } from '../provider.js';

export type KubernetesMode = 'pods' | 'agent-sandbox';

/** Where the broker finds one sandbox's agent. */
export interface AgentTarget {
  readonly sandboxId: string;
  /** The name every object of the sandbox shares (and its Service's). */
  readonly name: string;
  readonly namespace: string;
}

/** The settings the broker passes (env names in brackets; docs/provider-kubernetes.md). */
export interface KubernetesProviderOptions {
  readonly logger: Logger;
  /** [K8S_NAMESPACE] default `sbx-sandboxes`. */
  readonly namespace?: string;
  /** [K8S_MODE] default `pods`. */
  readonly mode?: KubernetesMode;
  /** [KUBECONFIG] absent: the in-cluster service account. */
  readonly kubeconfigPath?: string;
  /** A loaded configuration instead (tests, embedding); wins over `kubeconfigPath`. */
  readonly kubeConfig?: KubeConfig;
  /** [K8S_SANDBOX_TEMPLATE] agent-sandbox mode: claim sandboxes from this SandboxTemplate. */
  readonly sandboxTemplate?: string;
  /** [SANDBOX_IMAGE] default `sbx-agent:latest`. */
  readonly image?: string;
  /** Template name → image; a sandbox without a listed template gets `image`. */
  readonly templateImages?: Readonly<Record<string, string>>;
  /**
   * How the broker reaches an agent: `service` (default) is `http://<name>.<namespace>.svc:8080`,
   * stable across suspend and resume; a function for anything else (tests, a broker outside the cluster).
   */
  readonly agentAddress?: 'service' | ((target: AgentTarget) => string);
  /** [K8S_RUNTIME_CLASS] e.g. gvisor or kata: a stronger boundary than runc where the cluster has one. */
  readonly runtimeClassName?: string;
  /** [K8S_STORAGE_CLASS] for the workspace PVCs; absent: the cluster's default class. */
  readonly storageClassName?: string;
  /** Until the pod runs and its agent passes `/healthz` (default 120 s: image pulls, volume binding). */
  readonly startTimeoutMs?: number;
  /** Each API request (default 10 s); a slower API server is PROVIDER_UNAVAILABLE. */
  readonly requestTimeoutMs?: number;
  /** The pod's terminationGracePeriodSeconds (default 5). */
  readonly stopGraceSeconds?: number;
  /** How often a starting pod is looked at (default 250 ms). */
  readonly pollIntervalMs?: number;
  readonly agentLogLevel?: string;
  readonly agentAllowedOrigins?: readonly string[];
  /** Opaque-token mode (D20): the broker's introspection endpoint as the pods reach it. */
  readonly agentIntrospectionUrl?: string;
  /** A sandbox whose agent was running ended without being asked to (crash, OOM kill, eviction). */
  readonly onAgentExit?: AgentExitListener;
}

export interface KubernetesSettings {
  readonly logger: Logger;
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly mode: KubernetesMode;
  readonly sandboxTemplate: string | undefined;
  readonly image: string;
  readonly templateImages: Readonly<Record<string, string>>;
  readonly agentUrl: (target: AgentTarget) => string;
  readonly runtimeClassName: string | undefined;
  readonly storageClassName: string | undefined;
  readonly startTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly stopGraceSeconds: number;
  readonly pollIntervalMs: number;
  readonly agentLogLevel: string;
  readonly agentAllowedOrigins: readonly string[];
  readonly agentIntrospectionUrl: string | undefined;
  readonly onAgentExit: AgentExitListener | undefined;
}

export const AGENT_PORT = 8080;
export const DEFAULT_NAMESPACE = 'sbx-sandboxes';
export const DEFAULT_IMAGE = 'sbx-agent:latest';

export const serviceAgentUrl = (target: AgentTarget): string =>
  `http://${target.name}.${target.namespace}.svc:${AGENT_PORT}`;

function loadKubeConfig(options: KubernetesProviderOptions): KubeConfig {
  if (options.kubeConfig !== undefined) return options.kubeConfig;
  const config = new KubeConfig();
  try {
    if (options.kubeconfigPath === undefined) config.loadFromCluster();
    else config.loadFromFile(options.kubeconfigPath);
  } catch (err) {
    throw providerUnavailable('the Kubernetes configuration could not be loaded', err);
  }
  if (config.getCurrentCluster() === null)
    throw providerUnavailable('the Kubernetes configuration names no cluster');
  return config;
}

export function resolveKubernetesSettings(options: KubernetesProviderOptions): KubernetesSettings {
  const mode = options.mode ?? 'pods';
  if (options.sandboxTemplate !== undefined && mode !== 'agent-sandbox')
    throw providerUnavailable('K8S_SANDBOX_TEMPLATE needs K8S_MODE=agent-sandbox');
  const agentAddress = options.agentAddress ?? 'service';
  return {
    logger: options.logger,
    kubeConfig: loadKubeConfig(options),
    namespace: options.namespace ?? DEFAULT_NAMESPACE,
    mode,
    sandboxTemplate: options.sandboxTemplate,
    image: options.image ?? DEFAULT_IMAGE,
    templateImages: options.templateImages ?? {},
    agentUrl: agentAddress === 'service' ? serviceAgentUrl : agentAddress,
    runtimeClassName: options.runtimeClassName,
    storageClassName: options.storageClassName,
    startTimeoutMs: options.startTimeoutMs ?? 120_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    stopGraceSeconds: options.stopGraceSeconds ?? 5,
    pollIntervalMs: options.pollIntervalMs ?? 250,
    agentLogLevel: options.agentLogLevel ?? 'info',
    agentAllowedOrigins: options.agentAllowedOrigins ?? [],
    agentIntrospectionUrl: options.agentIntrospectionUrl,
    onAgentExit: options.onAgentExit,
  };
}
