// The sandbox's pod, built from nothing but its record: the same template serves a bare Pod
// (mode `pods`) and an agent-sandbox `Sandbox` (mode `agent-sandbox`). The agent's identity is
// split (D22): its container starts as root with CAP_SETUID and CAP_SETGID only, for the
// image's setpriv, which gives the agent real ids 1001 and the user's effective ids 1000 (the
// kernel then clears both). The key reaches the agent as a file its group alone reads; the
// sidecar runs as uid 1000 and its token reaches only the sidecar, also as a file.
import type { V1Container, V1EnvVar, V1PodSpec, V1SecurityContext, V1Volume } from '@kubernetes/client-node';
import type { AgentEnvVariables } from '@sbx/service-kit';
import { AGENT_PORT, type KubernetesSettings } from './kube-settings.js';
import type { KubeSandboxRecord } from './sandbox-record.js';
import { sidecarSecretName } from './kube-names.js';

/** The user's uid and gid (the image's `sandbox`); the sidecar's too. */
export const SANDBOX_UID = 1000;
/** The agent's own uid and gid (the image's `sbx-agent`): the pod's fsGroup, so the Secret's group. */
export const AGENT_UID = 1001;
export const AGENT_CONTAINER = 'agent';
export const SIDECAR_CONTAINER = 'sidecar';
/** Hands the workspace's root to the user before the agent starts. */
export const WORKSPACE_OWNER_CONTAINER = 'workspace-owner';
/** Keys of the sandbox's Secret, each a file in `/run/sbx`. */
export const SECRET_KEY_FILE = 'agent.key';
export const SECRET_REVOCATIONS = 'revocations.json';
export const SECRET_SANDBOX_ENV = 'sandbox-env.json';
export const SIDECAR_TOKEN_KEY = 'token';

const KEY_DIR = '/run/sbx';
const SIDECAR_DIR = '/run/sbx-sidecar';
const WORKSPACE = '/workspace';
const TMP_SIZE = '1Gi';
const WORKSPACE_OWNER_RESOURCES = {
  limits: { cpu: '100m', memory: '32Mi' },
  requests: { cpu: '10m', memory: '16Mi' },
};
const SIDECAR_RESOURCES = {
  limits: { cpu: '200m', memory: '128Mi' },
  requests: { cpu: '50m', memory: '64Mi' },
};
/** Scheduling asks for at most this much CPU; the limit is the policy's. */
const MAX_CPU_REQUEST_MILLICORES = 250;

/** What the pod template takes beyond the record. */
export interface PodTemplateOptions {
  readonly name: string;
  readonly runtimeClassName: string | undefined;
  readonly stopGraceSeconds: number;
  readonly agentLogLevel: string;
  readonly agentAllowedOrigins: readonly string[];
  readonly agentIntrospectionUrl: string | undefined;
}

export function podTemplateOptions(settings: KubernetesSettings, name: string): PodTemplateOptions {
  return {
    name,
    runtimeClassName: settings.runtimeClassName,
    stopGraceSeconds: settings.stopGraceSeconds,
    agentLogLevel: settings.agentLogLevel,
    agentAllowedOrigins: settings.agentAllowedOrigins,
    agentIntrospectionUrl: settings.agentIntrospectionUrl,
  };
}

interface RunAs {
  readonly runAsNonRoot: boolean;
  readonly runAsUser: number;
  readonly runAsGroup: number;
}

/** Every container: no privilege gain, nothing writable but its volumes, no capability but `add`. */
function confined(runAs: RunAs, add: readonly string[]): V1SecurityContext {
  return {
    ...runAs,
    privileged: false,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: add.length === 0 ? { drop: ['ALL'] } : { drop: ['ALL'], add: [...add] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** The sidecar: the user's uid and gid, not root, no capability (Pod Security `restricted`). */
export function hardenedSecurityContext(): V1SecurityContext {
  return confined({ runAsNonRoot: true, runAsUser: SANDBOX_UID, runAsGroup: SANDBOX_UID }, []);
}

/**
 * Root with only what a step of the start needs: setpriv's CAP_SETUID and CAP_SETGID for the
 * agent, CAP_CHOWN for the workspace's owner. Pod Security `baseline`, not `restricted`.
 */
function rootWith(add: readonly string[]): V1SecurityContext {
  return confined({ runAsNonRoot: false, runAsUser: 0, runAsGroup: 0 }, add);
}

function agentEnv(record: KubeSandboxRecord, options: PodTemplateOptions): V1EnvVar[] {
  const contract: AgentEnvVariables = {
    SANDBOX_ID: record.sandboxId,
    SANDBOX_TOKEN_ISSUER: record.tokenIssuer,
    SANDBOX_SIGNING_KEY_FILE: `${KEY_DIR}/${SECRET_KEY_FILE}`,
    WORKSPACE_ROOT: WORKSPACE,
    HOST: '0.0.0.0',
    PORT: String(AGENT_PORT),
    AGENT_LAUNCHER: 'direct',
    LOG_LEVEL: options.agentLogLevel,
    ...(options.agentAllowedOrigins.length === 0
      ? {}
      : { CORS_ALLOWED_ORIGINS: options.agentAllowedOrigins.join(',') }),
    ...(options.agentIntrospectionUrl === undefined
      ? {}
      : { AGENT_TOKEN_FORMAT: 'opaque', AGENT_INTROSPECTION_URL: options.agentIntrospectionUrl }),
  };
  // Not in AgentEnv yet on every branch: the client policy's variables for user processes.
  const extra = { AGENT_SANDBOX_ENV_FILE: `${KEY_DIR}/${SECRET_SANDBOX_ENV}`, HOME: WORKSPACE };
  return Object.entries({ ...contract, ...extra }).flatMap(([name, value]) =>
    value === undefined ? [] : [{ name, value }],
  );
}

function agentContainer(record: KubeSandboxRecord, options: PodTemplateOptions): V1Container {
  const { cpuMillicores, memoryBytes } = record.limits;
  return {
    name: AGENT_CONTAINER,
    image: record.image,
    imagePullPolicy: 'IfNotPresent',
    env: agentEnv(record, options),
    ports: [{ name: 'agent', containerPort: AGENT_PORT, protocol: 'TCP' }],
    readinessProbe: { httpGet: { path: '/healthz', port: AGENT_PORT }, periodSeconds: 2 },
    resources: {
      limits: { cpu: `${cpuMillicores}m`, memory: String(memoryBytes) },
      requests: {
        cpu: `${Math.min(cpuMillicores, MAX_CPU_REQUEST_MILLICORES)}m`,
        memory: String(memoryBytes),
      },
    },
    securityContext: rootWith(['SETUID', 'SETGID']),
    volumeMounts: [
      { name: 'workspace', mountPath: WORKSPACE },
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'keys', mountPath: KEY_DIR, readOnly: true },
    ],
  };
}

/**
 * The PVC's root is the volume's own (root's, or fsGroup's), so the user could not write the
 * workspace. Only its owner changes: the group stays the one kubelet set for fsGroup, so that
 * `OnRootMismatch` finds it as it left it and skips the recursive walk at every resume. A mount
 * point, never a symlink user code could have placed, and nothing runs beside it: no race.
 */
function workspaceOwnerContainer(image: string): V1Container {
  return {
    name: WORKSPACE_OWNER_CONTAINER,
    image,
    imagePullPolicy: 'IfNotPresent',
    command: ['chown', String(SANDBOX_UID), WORKSPACE],
    resources: WORKSPACE_OWNER_RESOURCES,
    securityContext: rootWith(['CHOWN']),
    volumeMounts: [{ name: 'workspace', mountPath: WORKSPACE }],
  };
}

function sidecarContainer(image: string): V1Container {
  return {
    name: SIDECAR_CONTAINER,
    image,
    imagePullPolicy: 'IfNotPresent',
    env: [{ name: 'SBX_SIDECAR_TOKEN_FILE', value: `${SIDECAR_DIR}/${SIDECAR_TOKEN_KEY}` }],
    resources: SIDECAR_RESOURCES,
    securityContext: hardenedSecurityContext(),
    volumeMounts: [
      { name: 'sidecar-token', mountPath: SIDECAR_DIR, readOnly: true },
      { name: 'sidecar-tmp', mountPath: '/tmp' },
    ],
  };
}

function volumes(record: KubeSandboxRecord, name: string): V1Volume[] {
  // 0440, root's, group fsGroup (1001): the agent reads its Secret through its real group, user
  // code (1000, no other group) cannot; the sidecar gets fsGroup as a supplementary group.
  const secretMode = 0o440;
  const base: V1Volume[] = [
    { name: 'workspace', persistentVolumeClaim: { claimName: name } },
    { name: 'tmp', emptyDir: { sizeLimit: TMP_SIZE } },
    { name: 'keys', secret: { secretName: name, defaultMode: secretMode } },
  ];
  if (record.sidecarImage === undefined) return base;
  return [
    ...base,
    { name: 'sidecar-token', secret: { secretName: sidecarSecretName(name), defaultMode: secretMode } },
    { name: 'sidecar-tmp', emptyDir: { sizeLimit: '64Mi' } },
  ];
}

export function sandboxPodSpec(record: KubeSandboxRecord, options: PodTemplateOptions): V1PodSpec {
  return {
    initContainers: [workspaceOwnerContainer(record.image)],
    containers: [
      agentContainer(record, options),
      ...(record.sidecarImage === undefined ? [] : [sidecarContainer(record.sidecarImage)]),
    ],
    volumes: volumes(record, options.name),
    // The agent needs no Kubernetes API; a token in the pod would be one for user code.
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    shareProcessNamespace: false,
    hostNetwork: false,
    hostPID: false,
    hostIPC: false,
    // A crashed agent is reported (AgentExitListener) and resumed by `start`, not restarted here.
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: options.stopGraceSeconds,
    ...(options.runtimeClassName === undefined ? {} : { runtimeClassName: options.runtimeClassName }),
    // Users are each container's own (the agent and the init step start as root). fsGroup is
    // the agent's group: the Secret's files become root:1001 0440. OnRootMismatch: kubelet
    // walks the workspace only when its root's group or mode is not what it set.
    securityContext: {
      fsGroup: AGENT_UID,
      fsGroupChangePolicy: 'OnRootMismatch',
      seccompProfile: { type: 'RuntimeDefault' },
    },
  };
}
