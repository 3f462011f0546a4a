// The parts of Kubernetes workload objects the deploy tests read, and the builds they read
// them from: base as written, each overlay rendered by kubectl kustomize where installed.
import path from 'node:path';
import { K8S_DIR, OVERLAYS, objectsOf, renderOverlay, type K8sObject } from './manifests.js';

export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  privileged?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type?: string };
}

export interface Probe {
  httpGet?: { path?: string; port?: string | number };
  exec?: { command?: string[] };
}

export interface Container {
  name: string;
  image: string;
  ports?: { name?: string; containerPort: number }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  securityContext?: SecurityContext;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

export interface PodSpec {
  securityContext?: SecurityContext;
  containers: Container[];
  initContainers?: Container[];
  volumes?: ({ name: string } & Record<string, unknown>)[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  serviceAccountName?: string;
}

export interface Deployment extends K8sObject {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
}

export interface Build {
  /** base, dev, production */
  readonly name: string;
  readonly objects: readonly K8sObject[];
  /** True when kustomize rendered it (patches applied); false: the listed files as written. */
  readonly rendered: boolean;
}

/**
 * Base as written (it has no patches), and each overlay as kubectl kustomize renders it. Without
 * kubectl the overlays are left out: their files unpatched would say what they do not deploy.
 */
export function builds(): Build[] {
  const base: Build = { name: 'base', objects: objectsOf(path.join(K8S_DIR, 'base')), rendered: false };
  return [
    base,
    ...OVERLAYS.flatMap((overlay) => {
      const rendered = renderOverlay(path.join(K8S_DIR, 'overlays', overlay));
      return rendered === undefined ? [] : [{ name: overlay, objects: rendered, rendered: true }];
    }),
  ];
}

/** Every object of every file that base or an overlay lists, patches not applied. */
export function listedObjects(): K8sObject[] {
  return ['base', ...OVERLAYS.map((overlay) => path.join('overlays', overlay))].flatMap((dir) =>
    objectsOf(path.join(K8S_DIR, dir)),
  );
}

export const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job']);

export function podSpecOf(workload: K8sObject): PodSpec {
  return (workload as Deployment).spec.template.spec;
}

export function containersOf(spec: PodSpec): Container[] {
  return [...spec.containers, ...(spec.initContainers ?? [])];
}

/** A container's effective setting: its own securityContext first, then the pod's. */
export function effective<K extends keyof SecurityContext>(
  pod: PodSpec,
  container: Container,
  key: K,
): SecurityContext[K] {
  return container.securityContext?.[key] ?? pod.securityContext?.[key];
}
