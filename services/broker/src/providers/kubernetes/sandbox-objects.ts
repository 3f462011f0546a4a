// Making and removing the objects a sandbox keeps across suspends: its Secret first (the
// sandbox exists once it does, and it is deleted last), then the sidecar's Secret, the
// workspace PVC and, in pods mode, the Service.
import { providerUnavailable, type SandboxSpec } from '../provider.js';
import type { KubeClient } from './kube-client.js';
import type { KubernetesSettings } from './kube-settings.js';
import { sidecarSecretName } from './kube-names.js';
import { deleteSandboxPods } from './sandbox-workloads.js';
import { agentService, keySecret, sidecarSecret, workspaceClaim } from './sandbox-resources.js';
import type { KubeSandboxRecord } from './sandbox-record.js';

/** False when the sandbox exists already. */
export function createKeySecret(
  client: KubeClient,
  record: KubeSandboxRecord,
  name: string,
  spec: SandboxSpec,
): Promise<boolean> {
  const { core, namespace, options } = client;
  const body = keySecret(record, name, spec);
  return client.create('create secret', () => core.createNamespacedSecret({ namespace, body }, options));
}

export async function createSandboxObjects(
  client: KubeClient,
  settings: KubernetesSettings,
  makesService: boolean,
  record: KubeSandboxRecord,
  name: string,
  spec: SandboxSpec,
): Promise<void> {
  const { core, namespace, options } = client;
  if (spec.sidecar !== undefined) {
    const body = sidecarSecret(record, name, spec.sidecar.token);
    if (
      !(await client.create('create sidecar secret', () =>
        core.createNamespacedSecret({ namespace, body }, options),
      ))
    )
      throw providerUnavailable(`a sidecar secret of an earlier sandbox ${spec.sandboxId} is still there`);
  }
  const claim = workspaceClaim(record, name, settings.storageClassName);
  // A PVC of the same name is one still being deleted (kubernetes.io/pvc-protection): not ours to reuse.
  if (
    !(await client.create('create workspace PVC', () =>
      core.createNamespacedPersistentVolumeClaim({ namespace, body: claim }, options),
    ))
  )
    throw providerUnavailable(`the workspace of an earlier sandbox ${spec.sandboxId} is still being deleted`);
  if (makesService) {
    const body = agentService(record, name);
    // Same selector, same port: a leftover Service of this sandbox serves as well.
    await client.create('create service', () => core.createNamespacedService({ namespace, body }, options));
  }
}

/** Everything but what the workload made (the pod or Sandbox); gone already is fine. */
export async function removeSandboxObjects(
  client: KubeClient,
  makesService: boolean,
  sandboxId: string,
  name: string,
): Promise<void> {
  const { core, namespace, options } = client;
  await deleteSandboxPods(client, sandboxId);
  if (makesService)
    await client.remove('delete service', () => core.deleteNamespacedService({ namespace, name }, options));
  await client.remove('delete workspace PVC', () =>
    core.deleteNamespacedPersistentVolumeClaim({ namespace, name }, options),
  );
  await client.remove('delete sidecar secret', () =>
    core.deleteNamespacedSecret({ namespace, name: sidecarSecretName(name) }, options),
  );
  await client.remove('delete secret', () => core.deleteNamespacedSecret({ namespace, name }, options));
}
