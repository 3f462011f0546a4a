// Is the sandbox's pod up, and does its agent answer? The pod's phase from the API (a pod
// that ended fails the start at once, with kubelet's reason), then the agent's own
// `/healthz` with a token for this sandbox (agent-readiness.ts), until the deadline.
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { isHealthy } from '../agent-readiness.js';
import type { KubeClient } from './kube-client.js';
import { sandboxSelector } from './kube-names.js';

/** The sandbox's pod that is not being deleted, if any (pods mode gives each start a new name). */
export async function currentPod(client: KubeClient, sandboxId: string): Promise<V1Pod | undefined> {
  const { core, namespace, options } = client;
  const pods = await client.call('list pods', () =>
    core.listNamespacedPod({ namespace, labelSelector: sandboxSelector(sandboxId) }, options),
  );
  return pods.items.find((pod) => pod.metadata?.deletionTimestamp === undefined);
}

export const podEnded = (pod: V1Pod): boolean =>
  pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Unknown';

/** What kubelet says is wrong, for the operator: ImagePullBackOff, OOMKilled, Unschedulable… */
export function describePod(pod: V1Pod | undefined): string {
  if (pod === undefined) return 'no pod';
  const reasons = [
    `phase ${pod.status?.phase ?? 'unknown'}`,
    pod.status?.reason,
    ...(pod.status?.conditions ?? [])
      .filter((c) => c.status === 'False' && c.reason !== undefined)
      .map((c) => `${c.type}: ${c.reason}`),
    // An init step that failed (the workspace's owner) is named: its pod only says Failed.
    ...(pod.status?.initContainerStatuses ?? []).map((c) => {
      const reason = c.state?.waiting?.reason ?? c.state?.terminated?.reason;
      return reason === undefined || reason === 'Completed' ? undefined : `${c.name}: ${reason}`;
    }),
    ...(pod.status?.containerStatuses ?? []).map(
      (c) => c.state?.waiting?.reason ?? c.state?.terminated?.reason,
    ),
  ];
  return reasons.filter((r) => r !== undefined && r !== '').join(', ');
}

export interface ReadinessWait {
  readonly client: KubeClient;
  readonly sandboxId: string;
  readonly url: string;
  readonly bearer: () => string;
  readonly deadline: number;
  readonly pollIntervalMs: number;
  readonly gaveUp: () => boolean;
}

/** Resolves once the pod runs and its agent answers for this sandbox; throws with the pod's state. */
export async function waitUntilPodHealthy(wait: ReadinessWait): Promise<void> {
  let pod: V1Pod | undefined;
  for (;;) {
    if (wait.gaveUp()) throw new Error('the provider shut down while the sandbox started');
    pod = await currentPod(wait.client, wait.sandboxId);
    if (pod !== undefined && podEnded(pod)) throw new Error(`the sandbox pod ended (${describePod(pod)})`);
    const remaining = wait.deadline - Date.now();
    if (pod?.status?.phase === 'Running' && remaining > 0) {
      const timeout = Math.max(50, Math.min(remaining, 1000));
      if (await isHealthy(wait.url, wait.sandboxId, timeout, wait.bearer)) return;
    }
    if (Date.now() >= wait.deadline)
      throw new Error(`the agent did not pass its health check in time (${describePod(pod)})`);
    await sleep(wait.pollIntervalMs);
  }
}
