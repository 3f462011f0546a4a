import { SbxError } from '@sbx/protocol';
import type { SigningKey } from '@sbx/tokens';
import { inspectAgent } from '../agent-inspection.js';
import { dataplaneOf, isHealthy, readinessToken } from '../agent-readiness.js';
import {
  assertSandboxId,
  providerUnavailable,
  sandboxExists,
  type Dataplane,
  type ProviderSandboxStatus,
  type Revocation,
  type SandboxProvider,
  type SandboxSpec,
} from '../provider.js';
import { SerialQueue } from '../serial-queue.js';
import { KubeClient } from './kube-client.js';
import {
  resolveKubernetesSettings,
  type KubernetesProviderOptions,
  type KubernetesSettings,
} from './kube-settings.js';
import { ANNOTATION_SANDBOX_ID, MANAGED_SELECTOR, sandboxResourceName } from './kube-names.js';
import { podTemplateOptions } from './pod-manifest.js';
import { currentPod, podEnded, waitUntilPodHealthy } from './pod-readiness.js';
import { PodWatcher } from './pod-watcher.js';
import { recordOf, type KubeSandboxRecord } from './sandbox-record.js';
import { createKeySecret, createSandboxObjects, removeSandboxObjects } from './sandbox-objects.js';
import {
  existingSandboxSecret,
  findSandboxSecret,
  KEY_FILE,
  REVOCATIONS_FILE,
  updateSecretFile,
} from './sandbox-secrets.js';
import { mergeRevocationList } from '../revocation-file.js';
import { deleteSandboxPods, workloadFor, type SandboxWorkload } from './sandbox-workloads.js';

export type { KubernetesProviderOptions } from './kube-settings.js';

const WORKSPACE_PATH = '/workspace';

/**
 * One pod per sandbox in one namespace (docs/provider-kubernetes.md): the agent in a hardened
 * container, its key and revocation list in a Secret, its workspace on a PVC that outlives a
 * suspend. Sandboxes belong to the cluster, not to this process: `close` leaves them running
 * for the next broker (or another replica), and any replica can resume them from their Secret.
 */
export class KubernetesProvider implements SandboxProvider {
  readonly name = 'kubernetes';
  readonly isolation = 'container';
  readonly #settings: KubernetesSettings;
  readonly #client: KubeClient;
  readonly #workload: SandboxWorkload;
  readonly #watcher: PodWatcher | undefined;
  readonly #queue = new SerialQueue();
  /** Revocations have their own queue: they must not wait behind a slow start. */
  readonly #revocations = new SerialQueue();
  /** Sandboxes whose pod this provider is bringing up now: unhealthy is 'starting', not 'failed'. */
  readonly #starting = new Set<string>();
  #closed = false;

  private constructor(settings: KubernetesSettings) {
    this.#settings = settings;
    this.#client = new KubeClient(settings.kubeConfig, settings.namespace, settings.requestTimeoutMs);
    this.#workload = workloadFor(settings, this.#client);
    const onAgentExit = settings.onAgentExit;
    this.#watcher =
      onAgentExit === undefined
        ? undefined
        : new PodWatcher({
            kubeConfig: settings.kubeConfig,
            namespace: settings.namespace,
            logger: settings.logger,
            onAgentExit,
          });
  }

  /** Loads the configuration and checks the API answers (and lets it list Secrets) before serving. */
  static async open(options: KubernetesProviderOptions): Promise<KubernetesProvider> {
    const provider = new KubernetesProvider(resolveKubernetesSettings(options));
    await provider.list();
    provider.#watcher?.start();
    const { namespace, mode } = provider.#settings;
    provider.#settings.logger.info({ namespace, mode }, 'kubernetes sandbox provider ready');
    return provider;
  }

  async create(spec: SandboxSpec): Promise<{ providerRef: string; dataplane: Dataplane }> {
    assertSandboxId(spec.sandboxId);
    this.#assertOpen();
    const id = spec.sandboxId;
    const name = sandboxResourceName(id);
    const record = recordOf(spec, this.#settings.image, this.#settings.templateImages);
    return this.#queue.run(id, async () => {
      if (!(await createKeySecret(this.#client, record, name, spec))) throw sandboxExists(id);
      try {
        await createSandboxObjects(
          this.#client,
          this.#settings,
          this.#workload.makesService,
          record,
          name,
          spec,
        );
        const dataplane = await this.#bringUp(record, name, spec.signingKey, true);
        return { providerRef: `kubernetes:${this.#settings.namespace}/${name}`, dataplane };
      } catch (err) {
        // A sandbox that never came up leaves nothing behind (the reconciler retries what is left).
        await this.#removeAll(id, name).catch((cleanup: unknown) =>
          this.#settings.logger.warn({ sandbox_id: id, err: cleanup }, 'could not remove a failed sandbox'),
        );
        throw err;
      }
    });
  }

  async start(sandboxId: string): Promise<Dataplane> {
    assertSandboxId(sandboxId);
    this.#assertOpen();
    return this.#queue.run(sandboxId, async () => {
      const { record, key } = await existingSandboxSecret(this.#client, sandboxId);
      const name = sandboxResourceName(sandboxId);
      const pod = await currentPod(this.#client, sandboxId);
      const suspended = await this.#workload.suspended(name);
      if (pod?.status?.phase === 'Running' && !suspended && (await this.#healthy(record, name, key)))
        return this.#dataplane(sandboxId, name);
      // A pending pod (a start under way elsewhere, or before a broker restart) is waited for.
      if (pod?.status?.phase === 'Pending' && !suspended) return this.#bringUp(record, name, key, false);
      // One that ended (or runs without answering) is replaced; deleted directly, since a
      // Sandbox at 1 replica gets a new pod from its controller.
      if (pod !== undefined) await deleteSandboxPods(this.#client, sandboxId);
      return this.#bringUp(record, name, key, true);
    });
  }

  async stop(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, async () => {
      await existingSandboxSecret(this.#client, sandboxId);
      await this.#workload.suspend(sandboxId, sandboxResourceName(sandboxId));
    });
  }

  async destroy(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, () => this.#removeAll(sandboxId, sandboxResourceName(sandboxId)));
  }

  async status(sandboxId: string): Promise<ProviderSandboxStatus> {
    assertSandboxId(sandboxId);
    const found = await findSandboxSecret(this.#client, sandboxId);
    if (found === undefined) return 'missing';
    const name = sandboxResourceName(sandboxId);
    const pod = await currentPod(this.#client, sandboxId);
    const starting = this.#starting.has(sandboxId);
    if (pod === undefined || (await this.#workload.suspended(name))) return starting ? 'starting' : 'stopped';
    if (podEnded(pod)) return 'failed';
    if (pod.status?.phase !== 'Running')
      return starting || pod.status?.phase === 'Pending' ? 'starting' : 'failed';
    if (await this.#healthy(found.record, name, found.key)) return 'running';
    return starting ? 'starting' : 'failed';
  }

  async list(): Promise<readonly string[]> {
    const { core, namespace, options } = this.#client;
    const labelSelector = MANAGED_SELECTOR;
    const [secrets, pods] = await Promise.all([
      this.#client.call('list secrets', () =>
        core.listNamespacedSecret({ namespace, labelSelector }, options),
      ),
      this.#client.call('list pods', () => core.listNamespacedPod({ namespace, labelSelector }, options)),
    ]);
    const ids = [...secrets.items, ...pods.items].flatMap(
      (item) => item.metadata?.annotations?.[ANNOTATION_SANDBOX_ID] ?? [],
    );
    return [...new Set(ids)].toSorted();
  }

  async inspect(sandboxId: string) {
    assertSandboxId(sandboxId);
    try {
      const found = await findSandboxSecret(this.#client, sandboxId);
      const pod = found === undefined ? undefined : await currentPod(this.#client, sandboxId);
      if (found === undefined || pod?.status?.phase !== 'Running') return undefined;
      const name = sandboxResourceName(sandboxId);
      return await inspectAgent(sandboxId, {
        dataplane: this.#dataplane(sandboxId, name),
        bearer: () => readinessToken(found.key, sandboxId, found.record.tokenIssuer),
      });
    } catch {
      return undefined; // an API that does not answer is an agent that reports nothing
    }
  }

  /** Merges into the Secret's `revocations.json`; kubelet projects it into the pod (not within 1 s: see the doc). */
  async revoke(sandboxId: string, revocation: Revocation): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#revocations.run(sandboxId, () =>
      updateSecretFile(this.#client, sandboxId, REVOCATIONS_FILE, (current) =>
        mergeRevocationList(current, revocation, Date.now()),
      ).catch((err: unknown) => {
        throw err instanceof SbxError
          ? err
          : providerUnavailable(`the revocation list of sandbox ${sandboxId} could not be merged`, err);
      }),
    );
  }

  /** Replaces `agent.key` in the Secret; the broker's own probes sign with the new key at once. */
  async rotateKey(sandboxId: string, key: SigningKey): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#revocations.run(sandboxId, () =>
      updateSecretFile(this.#client, sandboxId, KEY_FILE, () => key.toBase64url()),
    );
  }

  /** Stops watching and refuses new work; the sandboxes keep running (they are the cluster's). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watcher?.close();
    await Promise.all([this.#queue.settled(), this.#revocations.settled()]);
  }

  #assertOpen(): void {
    if (this.#closed) throw providerUnavailable('the kubernetes provider is shut down');
  }

  #dataplane(sandboxId: string, name: string): Dataplane {
    const url = this.#settings.agentUrl({ sandboxId, name, namespace: this.#settings.namespace });
    return dataplaneOf(url.replace(/\/+$/, ''), WORKSPACE_PATH);
  }

  #healthy(record: KubeSandboxRecord, name: string, key: SigningKey): Promise<boolean> {
    const url = this.#dataplane(record.sandboxId, name).httpBaseUrl;
    return isHealthy(url, record.sandboxId, 1000, () =>
      readinessToken(key, record.sandboxId, record.tokenIssuer),
    );
  }

  /** Runs the pod and waits for its agent; a pod that does not come up is ended again. */
  async #bringUp(
    record: KubeSandboxRecord,
    name: string,
    key: SigningKey,
    makePod: boolean,
  ): Promise<Dataplane> {
    const id = record.sandboxId;
    this.#starting.add(id);
    try {
      if (makePod) await this.#workload.run(record, podTemplateOptions(this.#settings, name));
      const dataplane = this.#dataplane(id, name);
      await waitUntilPodHealthy({
        client: this.#client,
        sandboxId: id,
        url: dataplane.httpBaseUrl,
        bearer: () => readinessToken(key, id, record.tokenIssuer),
        deadline: Date.now() + this.#settings.startTimeoutMs,
        pollIntervalMs: this.#settings.pollIntervalMs,
        gaveUp: () => this.#closed,
      });
      return dataplane;
    } catch (err) {
      if (err instanceof SbxError) throw err;
      await this.#workload.suspend(id, name).catch(() => undefined);
      throw providerUnavailable(`sandbox ${id} did not start`, err);
    } finally {
      this.#starting.delete(id);
    }
  }

  async #removeAll(sandboxId: string, name: string): Promise<void> {
    await this.#workload.remove(sandboxId, name);
    await removeSandboxObjects(this.#client, this.#workload.makesService, sandboxId, name);
  }
}

/** What the broker calls (SANDBOX_PROVIDER=kubernetes). */
export function openKubernetesProvider(options: KubernetesProviderOptions): Promise<KubernetesProvider> {
  return KubernetesProvider.open(options);
}
