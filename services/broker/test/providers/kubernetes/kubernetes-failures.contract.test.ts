// contract: how the Kubernetes provider fails (fake API server, no cluster here): API errors
// and timeouts are PROVIDER_UNAVAILABLE, a sandbox that never comes up is removed, and a pod
// that ends on its own is reported through the pod watch.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KubernetesProvider } from '../../../src/providers/kubernetes/kubernetes-provider.js';
import { sandboxResourceName } from '../../../src/providers/kubernetes/kube-names.js';
import { captureLogger } from '../../support/broker-harness.js';
import { expectSbxError } from '../provider-contract.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { eventually, kubeSpec, objectsOf, startKubeKit, type KubeKit } from './kube-kit.js';

const COLLECTIONS = ['core/secrets', 'core/persistentvolumeclaims', 'core/services', 'core/pods'];

describe('contract: kubernetes provider failures (fake API server)', () => {
  let kit: KubeKit;
  beforeAll(async () => {
    kit = await startKubeKit({ startTimeoutMs: 1500, requestTimeoutMs: 1000 });
  });
  afterAll(async () => {
    await kit.dispose();
  });

  const leftovers = (sandboxId: string) => COLLECTIONS.flatMap((c) => objectsOf(kit.api, c, sandboxId));

  it('maps 403, 500 and a hung API server to PROVIDER_UNAVAILABLE, leaving nothing behind', async () => {
    const forbidden = kubeSpec();
    kit.api.failNext('POST', '/secrets', 403);
    const error = await expectSbxError(kit.provider.create(forbidden), 'PROVIDER_UNAVAILABLE');
    expect(error.message).toMatch(/403/);

    const broken = kubeSpec();
    kit.api.failNext('POST', '/pods', 500);
    await expectSbxError(kit.provider.create(broken), 'PROVIDER_UNAVAILABLE');
    expect(leftovers(broken.sandboxId)).toEqual([]);

    const hung = kubeSpec();
    await kit.provider.create(hung);
    kit.api.failNext('GET', `/secrets/${sandboxResourceName(hung.sandboxId)}`, 'hang');
    const timedOut = await expectSbxError(kit.provider.status(hung.sandboxId), 'PROVIDER_UNAVAILABLE');
    // The fake server never answers: the broker itself gave up on the request, at its deadline.
    expect(timedOut.message).toMatch(/read secret failed/);
    expect(timedOut.cause).toMatchObject({ name: 'AbortError' });
    await kit.provider.destroy(hung.sandboxId);
  });

  it('removes a sandbox whose agent never passes its health check, and rejects the create', async () => {
    const spec = kubeSpec();
    kit.agent.silent.add(sandboxResourceName(spec.sandboxId));
    const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
    expect((error.cause as Error).message).toMatch(/health check in time/);
    expect(leftovers(spec.sandboxId)).toEqual([]);
    expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
  });

  it('fails a create at once when the pod ends, naming kubelet’s reason', async () => {
    // Its own cluster with a start timeout far above any create: a create that waited it out
    // fails the bound, which leaves a loaded machine seconds of room.
    const START_TIMEOUT_MS = 30_000;
    const own = await startKubeKit({ startTimeoutMs: START_TIMEOUT_MS });
    try {
      const spec = kubeSpec();
      own.api.kubelet = 'fail';
      const started = Date.now();
      const error = await expectSbxError(own.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(START_TIMEOUT_MS / 2);
      expect((error.cause as Error).message).toMatch(/pod ended.*Failed.*Error/);
      expect(COLLECTIONS.flatMap((c) => objectsOf(own.api, c, spec.sandboxId))).toEqual([]);
    } finally {
      await own.dispose();
    }
  });

  it('removes a sandbox whose pod stays pending (image pull, no node) past the start timeout', async () => {
    const spec = kubeSpec();
    kit.api.kubelet = 'pending';
    try {
      await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
    } finally {
      kit.api.kubelet = 'run';
    }
    expect(leftovers(spec.sandboxId)).toEqual([]);
  });

  it('turns a running pod that fails into an agent exit and a failed status; start replaces the pod', async () => {
    const spec = kubeSpec();
    await kit.provider.create(spec);
    await eventually(() => kit.api.watcherCount > 0, 'the pod watch');
    const [pod] = objectsOf(kit.api, 'core/pods', spec.sandboxId);
    kit.api.endPod(pod?.metadata.name ?? '', 137, 'OOMKilled');
    await eventually(() => kit.exits.some((e) => e.sandboxId === spec.sandboxId), 'the agent exit');
    expect(kit.exits.filter((e) => e.sandboxId === spec.sandboxId)).toEqual([
      { sandboxId: spec.sandboxId, code: 137 },
    ]);
    expect(await kit.provider.status(spec.sandboxId)).toBe('failed');

    await kit.provider.start(spec.sandboxId);
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    const pods = objectsOf(kit.api, 'core/pods', spec.sandboxId);
    expect(pods.map((p) => p.metadata.name)).not.toContain(pod?.metadata.name);
    // A stop is asked for: no exit is reported for it.
    await kit.provider.stop(spec.sandboxId);
    await kit.provider.destroy(spec.sandboxId);
    expect(kit.exits.filter((e) => e.sandboxId === spec.sandboxId)).toHaveLength(1);
  });

  it('opens the pod watch again when the API server ends it, and still reports a crash', async () => {
    const spec = kubeSpec();
    await kit.provider.create(spec);
    await eventually(() => kit.api.watcherCount > 0, 'the pod watch');
    kit.api.dropWatches();
    await eventually(() => kit.api.watcherCount === 0, 'the watch to be dropped');
    await eventually(() => kit.api.watcherCount > 0, 'the watch to be opened again');
    const [pod] = objectsOf(kit.api, 'core/pods', spec.sandboxId);
    kit.api.endPod(pod?.metadata.name ?? '', 1);
    await eventually(() => kit.exits.some((e) => e.sandboxId === spec.sandboxId), 'the agent exit');
    expect(kit.exits.filter((e) => e.sandboxId === spec.sandboxId)).toEqual([
      { sandboxId: spec.sandboxId, code: 1 },
    ]);
    await kit.provider.destroy(spec.sandboxId);
  });
});

describe('contract: kubernetes provider open (fake API server)', () => {
  it('refuses to open when the API server refuses its service account', async () => {
    const api = await FakeKubeApi.start();
    try {
      api.failNext('GET', '/secrets', 403);
      const error = await expectSbxError(
        KubernetesProvider.open({
          logger: captureLogger([]),
          kubeConfig: api.kubeConfig(),
          namespace: 'sbx-test',
        }),
        'PROVIDER_UNAVAILABLE',
      );
      expect(error.message).toMatch(/list secrets answered 403/);
    } finally {
      await api.close();
    }
  });
});
