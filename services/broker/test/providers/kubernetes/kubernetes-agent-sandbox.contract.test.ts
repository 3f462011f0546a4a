// contract: K8S_MODE=agent-sandbox against a fake API server that plays the kubernetes-sigs/
// agent-sandbox controller (a Sandbox at 1 replica gets a pod from its podTemplate, at 0 none).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sandboxResourceName } from '../../../src/providers/kubernetes/kube-names.js';
import { expectSbxError } from '../provider-contract.js';
import { kubeSpec, objectsOf, startKubeKit, type KubeKit } from './kube-kit.js';

const SANDBOXES = 'agents.x-k8s.io/sandboxes';
const SANDBOXES_PATH = '/apis/agents.x-k8s.io/v1alpha1/namespaces/sbx-test/sandboxes';

interface SentSandbox {
  apiVersion: string;
  kind: string;
  spec: { replicas: number; podTemplate: { metadata: { labels: Record<string, string> }; spec: unknown } };
}

describe('contract: kubernetes provider, agent-sandbox mode (fake API server)', () => {
  let kit: KubeKit;
  beforeAll(async () => {
    kit = await startKubeKit({ mode: 'agent-sandbox' });
  });
  afterAll(async () => {
    await kit.dispose();
  });

  it('creates a Sandbox whose podTemplate is the pod pods mode would create', async () => {
    const spec = kubeSpec({
      limits: {
        maxProcesses: 64,
        memoryBytes: 2 ** 30,
        cpuMillicores: 750,
        maxFileBytes: 2 ** 30,
        diskBytes: 2 ** 32,
      },
    });
    await kit.provider.create(spec);
    const [sent] = kit.api.sent('POST', SANDBOXES_PATH) as SentSandbox[];
    expect(sent).toMatchObject({
      apiVersion: 'agents.x-k8s.io/v1alpha1',
      kind: 'Sandbox',
      spec: { replicas: 1 },
    });
    expect(sent?.spec.podTemplate.metadata.labels).toMatchObject({
      'sbx.dev/sandbox-id': spec.sandboxId,
      'sbx.dev/network': 'on',
    });
    // The agent-sandbox controller makes the Service; the provider makes none of its own.
    expect(kit.api.sent('POST', '/services')).toEqual([]);

    const pods = await startKubeKit();
    try {
      await pods.provider.create(spec);
      const [pod] = pods.api.sent('POST', '/pods') as { spec: unknown }[];
      expect(sent?.spec.podTemplate.spec).toEqual(pod?.spec);
    } finally {
      await pods.dispose();
    }
    await kit.provider.destroy(spec.sandboxId);
  });

  it('suspends with replicas 0 (pod gone, PVC and Secret kept) and resumes with replicas 1', async () => {
    const spec = kubeSpec();
    const { dataplane } = await kit.provider.create(spec);
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.stop(spec.sandboxId);
    const name = sandboxResourceName(spec.sandboxId);
    expect(kit.api.store.get(SANDBOXES, name)?.['spec']).toMatchObject({ replicas: 0 });
    expect(objectsOf(kit.api, 'core/pods', spec.sandboxId)).toEqual([]);
    expect(objectsOf(kit.api, 'core/persistentvolumeclaims', spec.sandboxId)).toHaveLength(1);
    expect(objectsOf(kit.api, 'core/secrets', spec.sandboxId)).toHaveLength(1);
    expect(await kit.provider.status(spec.sandboxId)).toBe('stopped');

    expect(await kit.provider.start(spec.sandboxId)).toEqual(dataplane);
    expect(kit.api.store.get(SANDBOXES, name)?.['spec']).toMatchObject({ replicas: 1 });
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.destroy(spec.sandboxId);
    expect(kit.api.store.get(SANDBOXES, name)).toBeUndefined();
    expect(objectsOf(kit.api, 'core/pods', spec.sandboxId)).toEqual([]);
    expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
    await kit.provider.destroy(spec.sandboxId);
  });
});

describe('contract: kubernetes provider, SandboxClaim of K8S_SANDBOX_TEMPLATE (fake API server)', () => {
  it('claims from the template and removes the claim when no healthy agent appears', async () => {
    const kit = await startKubeKit({
      mode: 'agent-sandbox',
      sandboxTemplate: 'sbx-agent',
      startTimeoutMs: 500,
    });
    try {
      const spec = kubeSpec();
      // The fake plays no claim controller: no pod ever appears.
      await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      const [claim] = kit.api.sent(
        'POST',
        '/apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/sbx-test/sandboxclaims',
      );
      expect(claim).toMatchObject({
        apiVersion: 'extensions.agents.x-k8s.io/v1alpha1',
        kind: 'SandboxClaim',
        metadata: {
          name: sandboxResourceName(spec.sandboxId),
          labels: { 'sbx.dev/managed-by': 'sbx-broker' },
        },
        spec: { sandboxTemplateRef: { name: 'sbx-agent' }, warmpool: 'none' },
      });
      expect(kit.api.store.list('extensions.agents.x-k8s.io/sandboxclaims')).toEqual([]);
      expect(objectsOf(kit.api, 'core/secrets', spec.sandboxId)).toEqual([]);
    } finally {
      await kit.dispose();
    }
  });
});
