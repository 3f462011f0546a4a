// What runs a sandbox's pod, per K8S_MODE: the provider makes the pod itself (`pods`), or
// hands the same pod template to kubernetes-sigs/agent-sandbox as a `Sandbox` (or claims
// one from a `SandboxTemplate`) and lets its controller make the pod. Suspend and resume
// are the pod's deletion and re-creation, or `spec.replicas` 0 and 1 of the Sandbox.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { KubeClient } from './kube-client.js';
import type { KubernetesSettings } from './kube-settings.js';
import { sandboxSelector } from './kube-names.js';
import type { PodTemplateOptions } from './pod-manifest.js';
import {
  AGENT_SANDBOX_EXTENSIONS_GROUP,
  AGENT_SANDBOX_GROUP,
  AGENT_SANDBOX_VERSION,
  agentSandbox,
  sandboxClaim,
  sandboxPod,
} from './sandbox-resources.js';
import type { KubeSandboxRecord } from './sandbox-record.js';

export interface SandboxWorkload {
  /** Pods mode makes the Service; the Sandbox controller makes one of the same name itself. */
  readonly makesService: boolean;
  /** Makes the pod run: creates it, or the object a controller makes it from. */
  run(record: KubeSandboxRecord, options: PodTemplateOptions): Promise<void>;
  /** Ends the pod; the Secret, PVC and Service stay. */
  suspend(sandboxId: string, name: string): Promise<void>;
  /** True while suspended on purpose (a Sandbox at 0 replicas whose pod may still be ending). */
  suspended(name: string): Promise<boolean>;
  /** Deletes the pod and whatever made it. */
  remove(sandboxId: string, name: string): Promise<void>;
}

export class PodWorkload implements SandboxWorkload {
  readonly makesService = true;
  constructor(private readonly client: KubeClient) {}

  async run(record: KubeSandboxRecord, options: PodTemplateOptions): Promise<void> {
    const podName = `${options.name}-${randomBytes(3).toString('hex')}`;
    const body = sandboxPod(record, podName, options);
    await this.client.call('create pod', () =>
      this.client.core.createNamespacedPod({ namespace: this.client.namespace, body }, this.client.options),
    );
  }

  async suspend(sandboxId: string): Promise<void> {
    await this.remove(sandboxId);
  }

  async suspended(): Promise<boolean> {
    return false;
  }

  async remove(sandboxId: string): Promise<void> {
    await deleteSandboxPods(this.client, sandboxId);
  }
}

/** Deletes every pod of the sandbox (kubelet then stops them within their grace period). */
export async function deleteSandboxPods(client: KubeClient, sandboxId: string): Promise<void> {
  const { core, namespace, options } = client;
  const pods = await client.call('list pods', () =>
    core.listNamespacedPod({ namespace, labelSelector: sandboxSelector(sandboxId) }, options),
  );
  for (const pod of pods.items) {
    const name = pod.metadata?.name;
    if (name !== undefined && pod.metadata?.deletionTimestamp === undefined)
      await client.remove('delete pod', () => core.deleteNamespacedPod({ namespace, name }, options));
  }
}

const Scalable = z.looseObject({ spec: z.looseObject({ replicas: z.number().optional() }) });
const Claim = z.looseObject({
  status: z.looseObject({ sandbox: z.looseObject({ Name: z.string().optional() }).optional() }).optional(),
});

/** One `Sandbox` per sandbox, made by the provider from the same pod template as in pods mode. */
export class AgentSandboxWorkload implements SandboxWorkload {
  readonly makesService = false;
  constructor(protected readonly client: KubeClient) {}

  protected ref(name: string) {
    const { namespace } = this.client;
    return {
      group: AGENT_SANDBOX_GROUP,
      version: AGENT_SANDBOX_VERSION,
      namespace,
      plural: 'sandboxes',
      name,
    };
  }

  async run(record: KubeSandboxRecord, options: PodTemplateOptions): Promise<void> {
    if (await this.scale(options.name, 1)) return;
    const body = agentSandbox(record, options, 1);
    const { name: _name, ...collection } = this.ref(options.name);
    await this.client.call('create Sandbox', () =>
      this.client.custom.createNamespacedCustomObject({ ...collection, body }, this.client.options),
    );
  }

  async suspend(_sandboxId: string, name: string): Promise<void> {
    await this.scale(name, 0);
  }

  async suspended(name: string): Promise<boolean> {
    const found = await this.client.find('read Sandbox', () =>
      this.client.custom.getNamespacedCustomObject(this.ref(name), this.client.options),
    );
    return found !== undefined && Scalable.parse(found).spec.replicas === 0;
  }

  async remove(_sandboxId: string, name: string): Promise<void> {
    await this.client.remove('delete Sandbox', () =>
      this.client.custom.deleteNamespacedCustomObject(this.ref(name), this.client.options),
    );
  }

  /** Sets `spec.replicas` of an existing Sandbox (read, then replace: a concurrent change is a 409). */
  protected async scale(name: string, replicas: 0 | 1): Promise<boolean> {
    const found: unknown = await this.client.find('read Sandbox', () =>
      this.client.custom.getNamespacedCustomObject(this.ref(name), this.client.options),
    );
    if (found === undefined) return false;
    const current = Scalable.parse(found);
    if (current.spec.replicas === replicas) return true;
    const body = { ...current, spec: { ...current.spec, replicas } };
    await this.client.call('scale Sandbox', () =>
      this.client.custom.replaceNamespacedCustomObject({ ...this.ref(name), body }, this.client.options),
    );
    return true;
  }
}

/**
 * A `SandboxClaim` of K8S_SANDBOX_TEMPLATE: the operator's template makes the pod, so the pod
 * template of this provider is not used (see docs/provider-kubernetes.md for what the template
 * must mount). Suspend scales the Sandbox the claim was given.
 */
export class SandboxClaimWorkload extends AgentSandboxWorkload {
  constructor(
    client: KubeClient,
    private readonly template: string,
  ) {
    super(client);
  }

  #claimRef(name: string) {
    const { namespace } = this.client;
    const group = AGENT_SANDBOX_EXTENSIONS_GROUP;
    return { group, version: AGENT_SANDBOX_VERSION, namespace, plural: 'sandboxclaims', name };
  }

  async #claimedSandbox(name: string): Promise<string | undefined> {
    const found: unknown = await this.client.find('read SandboxClaim', () =>
      this.client.custom.getNamespacedCustomObject(this.#claimRef(name), this.client.options),
    );
    return found === undefined ? undefined : (Claim.parse(found).status?.sandbox?.Name ?? name);
  }

  override async run(record: KubeSandboxRecord, options: PodTemplateOptions): Promise<void> {
    const claimed = await this.#claimedSandbox(options.name);
    if (claimed !== undefined) {
      await this.scale(claimed, 1);
      return;
    }
    const { name: _name, ...collection } = this.#claimRef(options.name);
    const body = sandboxClaim(record, options.name, this.template);
    await this.client.call('create SandboxClaim', () =>
      this.client.custom.createNamespacedCustomObject({ ...collection, body }, this.client.options),
    );
  }

  override async suspend(_sandboxId: string, name: string): Promise<void> {
    const claimed = await this.#claimedSandbox(name);
    if (claimed !== undefined) await this.scale(claimed, 0);
  }

  override async suspended(name: string): Promise<boolean> {
    const claimed = await this.#claimedSandbox(name);
    return claimed !== undefined && (await super.suspended(claimed));
  }

  override async remove(_sandboxId: string, name: string): Promise<void> {
    await this.client.remove('delete SandboxClaim', () =>
      this.client.custom.deleteNamespacedCustomObject(this.#claimRef(name), this.client.options),
    );
  }
}

export function workloadFor(settings: KubernetesSettings, client: KubeClient): SandboxWorkload {
  if (settings.mode === 'pods') return new PodWorkload(client);
  return settings.sandboxTemplate === undefined
    ? new AgentSandboxWorkload(client)
    : new SandboxClaimWorkload(client, settings.sandboxTemplate);
}
