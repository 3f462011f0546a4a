// Which Pod Security level the sandbox namespace must enforce, read off the pod the kubernetes
// provider really builds (services/broker/src/providers/kubernetes/pod-manifest.ts), checked by
// the standards' rules (pod-security.ts). The agent's split identity (docs/architecture.md D22)
// needs root with CAP_SETUID and CAP_SETGID for setpriv, and an init step with CAP_CHOWN: the
// pods meet `baseline`, not `restricted`, and for exactly those reasons.
import { describe, expect, it } from '@jest/globals';
import {
  sandboxPodSpec,
  type PodTemplateOptions,
} from '../../services/broker/src/providers/kubernetes/pod-manifest.js';
import type { KubeSandboxRecord } from '../../services/broker/src/providers/kubernetes/sandbox-record.js';
import { DEFAULT_SANDBOX_LIMITS } from '../../services/broker/src/providers/sandbox-limits.js';
import { byKind, named, type K8sObject } from './manifests.js';
import { podSecurityViolations, type CheckedPod, type PodSecurityLevel } from './pod-security.js';
import { builds, podSpecOf, WORKLOAD_KINDS } from './workloads.js';

const OPTIONS: PodTemplateOptions = {
  name: 'sbx-sb-psa-0123456789',
  runtimeClassName: undefined,
  stopGraceSeconds: 5,
  agentLogLevel: 'info',
  agentAllowedOrigins: [],
  agentIntrospectionUrl: undefined,
};
const RECORD: KubeSandboxRecord = {
  sandboxId: 'sb_psa',
  tenantId: 'tenant_psa',
  tokenIssuer: 'sbx-broker',
  network: 'on',
  limits: DEFAULT_SANDBOX_LIMITS,
  image: 'sbx-agent:latest',
};
const PODS: [string, CheckedPod][] = [
  ['without a sidecar', sandboxPodSpec(RECORD, OPTIONS)],
  ['with a sidecar', sandboxPodSpec({ ...RECORD, sidecarImage: 'creds-sidecar:1' }, OPTIONS)],
];

const levelOf = (namespace: K8sObject): string | undefined =>
  namespace.metadata.labels?.['pod-security.kubernetes.io/enforce'];

describe('the Pod Security rules (pod-security.ts)', () => {
  it('admit a non-root, drop-ALL pod as restricted and refuse host access even as baseline', () => {
    const restricted: CheckedPod = {
      securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'app',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      volumes: [{ name: 'tmp', emptyDir: {} } as { name: string }],
    };
    expect(podSecurityViolations(restricted, 'restricted')).toEqual([]);
    const hostile: CheckedPod = {
      hostPID: true,
      containers: [
        {
          name: 'app',
          ports: [{ hostPort: 80 }],
          securityContext: { privileged: true, capabilities: { add: ['SYS_ADMIN'] } },
        },
      ],
      volumes: [{ name: 'root', hostPath: { path: '/' } } as { name: string }],
    };
    expect(podSecurityViolations(hostile, 'baseline')).toEqual([
      'host namespaces',
      'hostPath volume root',
      'app: privileged',
      'app: capability SYS_ADMIN',
      'app: host port',
    ]);
  });
});

describe.each(PODS)("the kubernetes provider's sandbox pod, %s", (_name, pod) => {
  it('meets the Pod Security Standard baseline', () => {
    expect(podSecurityViolations(pod, 'baseline')).toEqual([]);
  });

  it('breaks restricted only where the split identity needs root: the init step and the agent', () => {
    expect(podSecurityViolations(pod, 'restricted')).toEqual([
      'workspace-owner: runAsNonRoot not true',
      'workspace-owner: runAsUser 0',
      'workspace-owner: adds CHOWN',
      'agent: runAsNonRoot not true',
      'agent: runAsUser 0',
      'agent: adds SETUID',
      'agent: adds SETGID',
    ]);
  });
});

describe.each(builds().map((build) => [build.name, build.objects] as const))(
  'the %s build',
  (_name, objects) => {
    const config = named(objects, 'ConfigMap', 'sbx-broker-config') as K8sObject & {
      data: Record<string, string>;
    };
    const sandboxNamespace = named(objects, 'Namespace', config.data['K8S_NAMESPACE'] ?? '');

    it("enforces on the sandbox namespace a level that admits the provider's pods: baseline", () => {
      const level = levelOf(sandboxNamespace) as PodSecurityLevel;
      expect(level).toBe('baseline');
      for (const [, pod] of PODS) expect(podSecurityViolations(pod, level)).toEqual([]);
      expect(sandboxNamespace.metadata.labels).toMatchObject({
        'pod-security.kubernetes.io/audit': 'baseline',
        'pod-security.kubernetes.io/warn': 'baseline',
      });
    });

    it('keeps every other namespace restricted, and its workloads meet it', () => {
      const others = byKind(objects, 'Namespace').filter((ns) => ns !== sandboxNamespace);
      expect(others.length).toBeGreaterThan(0);
      for (const namespace of others) expect(levelOf(namespace)).toBe('restricted');
      const workloads = objects.filter((object) => WORKLOAD_KINDS.has(object.kind));
      expect(workloads.flatMap((w) => podSecurityViolations(podSpecOf(w), 'restricted'))).toEqual([]);
    });
  },
);
