// Every object a sandbox is made of, as pure functions of its record: the Secret (key,
// revocation list, client environment), the sidecar's Secret, the workspace PVC (so a
// suspend, which deletes the pod, keeps the files), the Service, and the pod or the
// agent-sandbox object that makes it.
import type { V1PersistentVolumeClaim, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import type { SandboxSpec } from '../provider.js';
import {
  ANNOTATION_RECORD,
  ANNOTATION_SANDBOX_ID,
  LABEL_SANDBOX_ID,
  MANAGED_BY,
  LABEL_MANAGED_BY,
  labelValue,
  sandboxLabels,
  sidecarSecretName,
} from './kube-names.js';
import { AGENT_PORT } from './kube-settings.js';
import {
  SECRET_KEY_FILE,
  SECRET_REVOCATIONS,
  SECRET_SANDBOX_ENV,
  SIDECAR_TOKEN_KEY,
  sandboxPodSpec,
  type PodTemplateOptions,
} from './pod-manifest.js';
import type { KubeSandboxRecord } from './sandbox-record.js';

export const AGENT_SANDBOX_GROUP = 'agents.x-k8s.io';
export const AGENT_SANDBOX_EXTENSIONS_GROUP = 'extensions.agents.x-k8s.io';
export const AGENT_SANDBOX_VERSION = 'v1alpha1';

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** Plain metadata (client-node's model classes do not survive a spread). */
export interface SandboxMetadata {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
}

export function metadataOf(record: KubeSandboxRecord, name: string): SandboxMetadata {
  return {
    name,
    labels: sandboxLabels(record.sandboxId, record.tenantId, record.network),
    annotations: { [ANNOTATION_SANDBOX_ID]: record.sandboxId },
  };
}

export function keySecret(record: KubeSandboxRecord, name: string, spec: SandboxSpec): V1Secret {
  const meta = metadataOf(record, name);
  return {
    metadata: { ...meta, annotations: { ...meta.annotations, [ANNOTATION_RECORD]: JSON.stringify(record) } },
    type: 'Opaque',
    data: {
      [SECRET_KEY_FILE]: base64(spec.signingKey.toBase64url()),
      [SECRET_REVOCATIONS]: base64(JSON.stringify({ version: 1, jtis: {} })),
      [SECRET_SANDBOX_ENV]: base64(JSON.stringify(spec.environment ?? {})),
    },
  };
}

export function sidecarSecret(record: KubeSandboxRecord, name: string, token: string): V1Secret {
  return {
    metadata: metadataOf(record, sidecarSecretName(name)),
    type: 'Opaque',
    data: { [SIDECAR_TOKEN_KEY]: base64(token) },
  };
}

export function workspaceClaim(
  record: KubeSandboxRecord,
  name: string,
  storageClassName: string | undefined,
): V1PersistentVolumeClaim {
  return {
    metadata: metadataOf(record, name),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: String(record.limits.diskBytes) } },
      ...(storageClassName === undefined ? {} : { storageClassName }),
    },
  };
}

/** Cluster-internal only: the broker (or the ingress) reaches the agent by this name. */
export function agentService(record: KubeSandboxRecord, name: string): V1Service {
  return {
    metadata: metadataOf(record, name),
    spec: {
      type: 'ClusterIP',
      selector: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_SANDBOX_ID]: labelValue(record.sandboxId) },
      ports: [{ name: 'agent', port: AGENT_PORT, targetPort: AGENT_PORT, protocol: 'TCP' }],
    },
  };
}

/** A pod of its own name each time: a resume need not wait until the previous pod is gone. */
export function sandboxPod(record: KubeSandboxRecord, podName: string, options: PodTemplateOptions): V1Pod {
  return {
    metadata: { ...metadataOf(record, options.name), name: podName },
    spec: sandboxPodSpec(record, options),
  };
}

/** agents.x-k8s.io/v1alpha1 Sandbox: its controller makes the pod from the same template. */
export function agentSandbox(
  record: KubeSandboxRecord,
  options: PodTemplateOptions,
  replicas: 0 | 1,
): object {
  const meta = metadataOf(record, options.name);
  return {
    apiVersion: `${AGENT_SANDBOX_GROUP}/${AGENT_SANDBOX_VERSION}`,
    kind: 'Sandbox',
    metadata: meta,
    spec: {
      podTemplate: {
        metadata: { labels: meta.labels, annotations: meta.annotations },
        spec: sandboxPodSpec(record, options),
      },
      replicas,
    },
  };
}

/** extensions.agents.x-k8s.io/v1alpha1 SandboxClaim of an operator-made SandboxTemplate. */
export function sandboxClaim(record: KubeSandboxRecord, name: string, template: string): object {
  return {
    apiVersion: `${AGENT_SANDBOX_EXTENSIONS_GROUP}/${AGENT_SANDBOX_VERSION}`,
    kind: 'SandboxClaim',
    metadata: metadataOf(record, name),
    // A warm pool's pods were made before this sandbox's key existed: they could not hold it.
    spec: { sandboxTemplateRef: { name: template }, warmpool: 'none' },
  };
}
