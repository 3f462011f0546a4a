// What the Kubernetes builds enforce, checked in base and in each overlay: hardened pods, a
// highly available broker with its probes, Pod Security Admission on the namespaces, and
// broker rights confined to the sandbox namespace.
import { describe, expect, it } from '@jest/globals';
import { byKind, named, type K8sObject } from './manifests.js';
import {
  builds,
  containersOf,
  listedObjects,
  effective,
  podSpecOf,
  WORKLOAD_KINDS,
  type Deployment,
  type PolicyRule,
} from './workloads.js';

const SANDBOX_RESOURCES = new Set([
  'pods',
  'secrets',
  'services',
  'persistentvolumeclaims',
  'sandboxes',
  'sandboxclaims',
  'sandboxtemplates',
  'sandboxwarmpools',
]);
const SECRET_SETTINGS = [
  'DATABASE_URL',
  'REDIS_URL',
  'BROKER_MASTER_KEY',
  'BROKER_BOOTSTRAP_API_KEY',
  'METRICS_TOKEN',
];

type ConfigMap = K8sObject & { data: Record<string, string> };
type RoleBinding = K8sObject & {
  roleRef: { kind: string; name: string };
  subjects: { kind: string; name: string; namespace?: string }[];
};

const all = builds();

/** What keeps a workload from the pod security the namespaces enforce, one line each. */
function hardeningProblems(objects: readonly K8sObject[]): string[] {
  const workloads = objects.filter((object) => WORKLOAD_KINDS.has(object.kind));
  if (workloads.length === 0) return ['no workload'];
  return workloads.flatMap((workload) => {
    const pod = podSpecOf(workload);
    const hostAccess = pod.hostNetwork === true || pod.hostPID === true || pod.hostIPC === true;
    const containerProblems = containersOf(pod).flatMap((container) => {
      const context = container.securityContext;
      const checks: [string, boolean][] = [
        ['runAsNonRoot', effective(pod, container, 'runAsNonRoot') === true],
        ['seccomp RuntimeDefault', effective(pod, container, 'seccompProfile')?.type === 'RuntimeDefault'],
        ['allowPrivilegeEscalation false', context?.allowPrivilegeEscalation === false],
        ['readOnlyRootFilesystem', context?.readOnlyRootFilesystem === true],
        ['not privileged', context?.privileged !== true],
        ['drop ALL', context?.capabilities?.drop?.includes('ALL') === true],
        ['adds no capability', (context?.capabilities?.add ?? []).length === 0],
      ];
      return checks
        .filter(([, ok]) => !ok)
        .map(([what]) => `${workload.metadata.name}/${container.name}: ${what}`);
    });
    return [...(hostAccess ? [`${workload.metadata.name}: host namespaces`] : []), ...containerProblems];
  });
}

it('hardens every pod of every manifest file, overlays included, as written', () => {
  expect(hardeningProblems(listedObjects())).toEqual([]);
});

describe.each(all.map((build) => [build.name, build.objects] as const))('the %s build', (_name, objects) => {
  const config = named(objects, 'ConfigMap', 'sbx-broker-config') as ConfigMap;
  const sandboxNamespace = config.data['K8S_NAMESPACE'];
  const broker = named(objects, 'Deployment', 'sbx-broker') as Deployment;
  const brokerPod = broker.spec.template.spec;
  const brokerContainer = brokerPod.containers[0]!;

  it('hardens every pod: non-root, seccomp RuntimeDefault, no escalation, drop ALL, read-only root', () => {
    expect(hardeningProblems(objects)).toEqual([]);
  });

  it('gives writable paths only as emptyDir volumes, never a host path', () => {
    for (const workload of objects.filter((object) => WORKLOAD_KINDS.has(object.kind))) {
      for (const volume of podSpecOf(workload).volumes ?? []) {
        expect(Object.keys(volume).filter((key) => key !== 'name')).toEqual(['emptyDir']);
      }
    }
    const mounts = brokerContainer.volumeMounts?.map((mount) => mount.mountPath);
    expect(mounts).toEqual(expect.arrayContaining(['/tmp', '/var/lib/sbx-broker']));
  });

  it('runs at least two brokers, spread over nodes, never all disrupted at once', () => {
    expect(broker.spec.replicas).toBeGreaterThanOrEqual(2);
    const budget = named(objects, 'PodDisruptionBudget', 'sbx-broker') as K8sObject & {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(budget.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(broker.spec.template.metadata.labels).toMatchObject(budget.spec.selector.matchLabels);
  });

  it('probes the broker: /healthz for start and liveness, /readyz (database, Redis, migrations) for traffic', () => {
    expect(brokerContainer.startupProbe?.httpGet?.path).toBe('/healthz');
    expect(brokerContainer.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(brokerContainer.readinessProbe?.httpGet?.path).toBe('/readyz');
    const port = brokerContainer.ports?.find((p) => p.name === brokerContainer.readinessProbe?.httpGet?.port);
    expect(port?.containerPort).toBe(Number(config.data['PORT']));
    expect(config.data['HOST']).toBe('0.0.0.0');
  });

  it('serves the broker through a Service that selects its pods on its port', () => {
    const service = named(objects, 'Service', 'sbx-broker') as K8sObject & {
      spec: { selector: Record<string, string>; ports: { targetPort: string }[] };
    };
    expect(broker.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    expect(brokerContainer.ports?.map((p) => p.name)).toContain(service.spec.ports[0]?.targetPort);
  });

  it('configures the broker from the ConfigMap, its secrets from a Secret only', () => {
    expect(brokerContainer.envFrom).toEqual([
      { configMapRef: { name: 'sbx-broker-config' } },
      { secretRef: { name: 'sbx-broker-secrets' } },
    ]);
    expect(Object.keys(config.data).filter((key) => SECRET_SETTINGS.includes(key))).toEqual([]);
    expect(config.data['SANDBOX_PROVIDER']).toBe('kubernetes');
    expect(brokerPod.serviceAccountName).toBe('sbx-broker');
  });

  // Why baseline for sandboxes, checked against the provider's own pod: sandbox-pod-security.test.ts.
  it('labels the broker namespace Pod Security restricted and the sandbox one baseline, enforced', () => {
    const namespaces = byKind(objects, 'Namespace');
    expect(namespaces.map((ns) => ns.metadata.name)).toEqual(
      expect.arrayContaining([sandboxNamespace, broker.metadata.namespace]),
    );
    for (const ns of namespaces)
      expect(ns.metadata.labels).toMatchObject({
        'pod-security.kubernetes.io/enforce':
          ns.metadata.name === sandboxNamespace ? 'baseline' : 'restricted',
      });
  });

  it('grants the broker rights in the sandbox namespace only, on sandbox resources only', () => {
    expect([...byKind(objects, 'ClusterRole'), ...byKind(objects, 'ClusterRoleBinding')]).toEqual([]);
    const roles = byKind(objects, 'Role');
    expect(roles.length).toBeGreaterThan(0);
    for (const role of roles) {
      expect(role.metadata.namespace).toBe(sandboxNamespace);
      for (const rule of (role as K8sObject & { rules: PolicyRule[] }).rules) {
        for (const resource of rule.resources ?? []) expect(SANDBOX_RESOURCES).toContain(resource);
        expect([...(rule.verbs ?? []), ...(rule.apiGroups ?? [])]).not.toContain('*');
        expect(rule.verbs ?? []).not.toContain('escalate');
      }
    }
    for (const binding of byKind(objects, 'RoleBinding') as RoleBinding[]) {
      expect(binding.metadata.namespace).toBe(sandboxNamespace);
      expect(roles.map((role) => role.metadata.name)).toContain(binding.roleRef.name);
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: brokerPod.serviceAccountName, namespace: broker.metadata.namespace },
      ]);
    }
  });

  it('grants the agent-sandbox CRDs exactly when the broker runs in agent-sandbox mode', () => {
    const groups = byKind(objects, 'Role').flatMap((role) =>
      (role as K8sObject & { rules: PolicyRule[] }).rules.flatMap((rule) => rule.apiGroups ?? []),
    );
    const crdGroups = groups.filter((group) => group.endsWith('agents.x-k8s.io'));
    const expected: Record<string, string[]> = {
      'agent-sandbox': ['agents.x-k8s.io', 'extensions.agents.x-k8s.io'],
      pods: [],
    };
    expect([...new Set(crdGroups)].toSorted()).toEqual(expected[config.data['K8S_MODE'] ?? '']);
  });
});
