// Pod events → lifecycle: a watch on the namespace's sandbox pods (client-node `Watch`) that
// notices an agent that was running and ended without being asked (crash, OOM kill,
// eviction) and tells the broker, like the local provider's AgentExitListener.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '@sbx/service-kit';
import { z } from 'zod';
import type { AgentExitListener } from '../provider.js';
import { ANNOTATION_SANDBOX_ID, MANAGED_SELECTOR } from './kube-names.js';
import { AGENT_CONTAINER } from './pod-manifest.js';

const WatchedPod = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    annotations: z.record(z.string(), z.string()).optional(),
    deletionTimestamp: z.unknown().optional(),
  }),
  status: z
    .looseObject({
      phase: z.string().optional(),
      containerStatuses: z
        .array(
          z.looseObject({
            name: z.string(),
            state: z
              .looseObject({ terminated: z.looseObject({ exitCode: z.number() }).optional() })
              .optional(),
          }),
        )
        .optional(),
    })
    .optional(),
});
type WatchedPod = z.infer<typeof WatchedPod>;

export interface PodWatcherOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly logger: Logger;
  readonly onAgentExit: AgentExitListener;
  /** Before a watch that ended is opened again (default 1 s). */
  readonly retryMs?: number;
}

const agentExitCode = (pod: WatchedPod): number | null =>
  pod.status?.containerStatuses?.find((c) => c.name === AGENT_CONTAINER)?.state?.terminated?.exitCode ?? null;

export class PodWatcher {
  readonly #options: PodWatcherOptions;
  readonly #watch: Watch;
  /** Pods seen running: only their end is news (a pod that never ran is the start's failure). */
  readonly #running = new Set<string>();
  #controller: AbortController | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: PodWatcherOptions) {
    this.#options = options;
    this.#watch = new Watch(options.kubeConfig);
  }

  start(): void {
    void this.#open();
  }

  async #open(): Promise<void> {
    if (this.#closed) return;
    const path = `/api/v1/namespaces/${encodeURIComponent(this.#options.namespace)}/pods`;
    try {
      const controller = await this.#watch.watch(
        path,
        { labelSelector: MANAGED_SELECTOR },
        this.#onEvent,
        this.#onDone,
      );
      this.#controller = controller;
      if (this.#closed) controller.abort();
    } catch (err) {
      this.#onDone(err);
    }
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    this.#controller?.abort();
  }

  readonly #onEvent = (type: string, object: unknown): void => {
    const parsed = WatchedPod.safeParse(object);
    if (!parsed.success) return;
    const pod = parsed.data;
    const name = pod.metadata.name;
    // Deleted, or being deleted: the provider (or an operator) asked for it, no crash.
    if (type === 'DELETED' || pod.metadata.deletionTimestamp !== undefined) {
      this.#running.delete(name);
      return;
    }
    const phase = pod.status?.phase;
    if (phase === 'Running') this.#running.add(name);
    if ((phase === 'Failed' || phase === 'Succeeded') && this.#running.delete(name)) {
      const sandboxId = pod.metadata.annotations?.[ANNOTATION_SANDBOX_ID];
      if (sandboxId === undefined) return;
      this.#options.logger.warn({ sandbox_id: sandboxId, pod: name, phase }, 'sandbox pod ended');
      this.#options.onAgentExit(sandboxId, agentExitCode(pod), null);
    }
  };

  readonly #onDone = (err: unknown): void => {
    if (this.#closed) return;
    if (err !== null && err !== undefined)
      this.#options.logger.warn({ err }, 'sandbox pod watch ended; reopening');
    this.#retry = setTimeout(() => this.start(), this.#options.retryMs ?? 1000);
  };
}
