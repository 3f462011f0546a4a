// contract: the Kubernetes provider's lifecycle against a fake Kubernetes API server (no
// cluster here): create resolves once the pod runs and its (stand-in) agent answers, stop
// deletes only the pod, start makes a new one, destroy removes everything, once or twice.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SigningKey } from '@sbx/tokens';
import { expectSbxError } from '../provider-contract.js';
import { decodeData, eventually, kubeSpec, objectsOf, startKubeKit, type KubeKit } from './kube-kit.js';

describe('contract: kubernetes provider lifecycle (fake API server)', () => {
  let kit: KubeKit;
  beforeAll(async () => {
    kit = await startKubeKit();
  });
  afterAll(async () => {
    await kit.dispose();
  });

  it('creates a running sandbox: Secret, PVC, Service and a pod, reached at the agent address', async () => {
    const spec = kubeSpec();
    const { dataplane, providerRef } = await kit.provider.create(spec);
    expect(providerRef).toMatch(/^kubernetes:sbx-test\/sbx-sb-kube-/);
    expect(dataplane.httpBaseUrl).toMatch(/\/agents\/sbx-sb-kube-[a-z0-9-]+$/);
    expect(dataplane.wsBaseUrl).toBe(dataplane.httpBaseUrl.replace(/^http:/, 'ws:'));
    expect(dataplane.workspacePath).toBe('/workspace');
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    for (const collection of ['core/secrets', 'core/persistentvolumeclaims', 'core/services', 'core/pods'])
      expect(objectsOf(kit.api, collection, spec.sandboxId)).toHaveLength(1);
    const [secret] = objectsOf(kit.api, 'core/secrets', spec.sandboxId);
    expect(decodeData(secret, 'agent.key')).toBe(spec.signingKey.toBase64url());
    expect(JSON.parse(decodeData(secret, 'revocations.json'))).toEqual({ version: 1, jtis: {} });
    await kit.provider.destroy(spec.sandboxId);
  });

  it('refuses to create a sandbox that exists, leaving the first one running', async () => {
    const spec = kubeSpec();
    await kit.provider.create(spec);
    await expectSbxError(kit.provider.create({ ...spec, signingKey: SigningKey.generate() }), 'CONFLICT');
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    expect(objectsOf(kit.api, 'core/pods', spec.sandboxId)).toHaveLength(1);
    await kit.provider.destroy(spec.sandboxId);
  });

  it('stop deletes the pod but keeps the PVC and Secret; start makes a new pod with the same dataplane', async () => {
    const spec = kubeSpec();
    const { dataplane } = await kit.provider.create(spec);
    const [firstPod] = objectsOf(kit.api, 'core/pods', spec.sandboxId);
    await kit.provider.stop(spec.sandboxId);
    expect(objectsOf(kit.api, 'core/pods', spec.sandboxId)).toEqual([]);
    expect(objectsOf(kit.api, 'core/persistentvolumeclaims', spec.sandboxId)).toHaveLength(1);
    expect(objectsOf(kit.api, 'core/secrets', spec.sandboxId)).toHaveLength(1);
    expect(await kit.provider.status(spec.sandboxId)).toBe('stopped');
    expect(await kit.provider.inspect(spec.sandboxId)).toBeUndefined();
    await kit.provider.stop(spec.sandboxId);

    expect(await kit.provider.start(spec.sandboxId)).toEqual(dataplane);
    const [secondPod] = objectsOf(kit.api, 'core/pods', spec.sandboxId);
    expect(secondPod?.metadata.name).not.toBe(firstPod?.metadata.name);
    expect(secondPod?.['spec']).toEqual(firstPod?.['spec']);
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    // A running sandbox answers as is: no third pod.
    expect(await kit.provider.start(spec.sandboxId)).toEqual(dataplane);
    expect(
      kit.api.sent('POST', '/pods').filter((b) => JSON.stringify(b).includes(spec.sandboxId)),
    ).toHaveLength(2);
    await kit.provider.destroy(spec.sandboxId);
  });

  it('start waits for a pod already pending (a broker restarted mid-start) instead of making another', async () => {
    const spec = kubeSpec();
    await kit.provider.create(spec);
    const [pod] = objectsOf(kit.api, 'core/pods', spec.sandboxId);
    await kit.provider.stop(spec.sandboxId);
    if (pod === undefined) throw new Error('no pod was made');
    // kubelet has not started it yet, and will not on its own.
    kit.api.kubelet = 'pending';
    try {
      const pending = {
        ...pod,
        metadata: { ...pod.metadata, name: `${pod.metadata.name}-b` },
        status: { phase: 'Pending' },
      };
      kit.api.store.put('core/pods', pending);
      const posts = kit.api.sent('POST', '/pods').length;
      const started = kit.provider.start(spec.sandboxId);
      expect(await kit.provider.status(spec.sandboxId)).toBe('starting');
      kit.api.store.setStatus('core/pods', pending.metadata.name, { phase: 'Running' });
      await started;
      expect(kit.api.sent('POST', '/pods')).toHaveLength(posts);
    } finally {
      kit.api.kubelet = 'run';
    }
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.destroy(spec.sandboxId);
  });

  it('destroys everything, idempotently; a destroyed sandbox is missing and cannot be started', async () => {
    const spec = kubeSpec({ sidecar: { image: 'creds-sidecar:1', token: 'pod-jwt' } });
    await kit.provider.create(spec);
    await kit.provider.destroy(spec.sandboxId);
    for (const collection of ['core/secrets', 'core/persistentvolumeclaims', 'core/services', 'core/pods'])
      expect(objectsOf(kit.api, collection, spec.sandboxId)).toEqual([]);
    expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
    await kit.provider.destroy(spec.sandboxId);
    await kit.provider.destroy(kubeSpec().sandboxId);
    await expectSbxError(kit.provider.start(spec.sandboxId), 'SANDBOX_NOT_FOUND');
    await expectSbxError(kit.provider.stop(spec.sandboxId), 'SANDBOX_NOT_FOUND');
  });

  it('lists every sandbox it holds, running or stopped, by label', async () => {
    const [a, b] = [kubeSpec(), kubeSpec({ sandboxId: `sb:Odd.Id_${process.pid}` })];
    await Promise.all([kit.provider.create(a), kit.provider.create(b)]);
    await kit.provider.stop(b.sandboxId);
    // Not ours: another workload in the namespace.
    kit.api.store.put('core/secrets', {
      metadata: { name: 'unrelated', annotations: { 'sbx.dev/sandbox-id': 'x' } },
    });
    expect(await kit.provider.list()).toEqual([a.sandboxId, b.sandboxId].toSorted());
    const lists = kit.api.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/secrets'));
    expect(lists.length).toBeGreaterThan(0);
    await Promise.all([kit.provider.destroy(a.sandboxId), kit.provider.destroy(b.sandboxId)]);
    expect(await kit.provider.list()).toEqual([]);
  });

  it('revokes and rotates into the Secret the pod projects; the broker probes with the new key', async () => {
    const spec = kubeSpec();
    await kit.provider.create(spec);
    const expiresAt = new Date(Date.now() + 60_000);
    await kit.provider.revoke(spec.sandboxId, { jtis: [{ jti: 'tok_a', expiresAt }] });
    const key = SigningKey.generate();
    await kit.provider.rotateKey(spec.sandboxId, key);
    const notBefore = new Date();
    await kit.provider.revoke(spec.sandboxId, { jtis: [], notBefore });
    const [secret] = objectsOf(kit.api, 'core/secrets', spec.sandboxId);
    expect(JSON.parse(decodeData(secret, 'revocations.json'))).toEqual({
      version: 1,
      not_before: Math.floor(notBefore.getTime() / 1000),
      jtis: { tok_a: Math.ceil(expiresAt.getTime() / 1000) },
    });
    expect(decodeData(secret, 'agent.key')).toBe(key.toBase64url());
    // The stand-in agent verifies with the Secret's key: running means the probe used the new one.
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.stop(spec.sandboxId);
    await kit.provider.revoke(spec.sandboxId, { jtis: [{ jti: 'tok_stopped', expiresAt }] });
    await kit.provider.destroy(spec.sandboxId);
    await expectSbxError(kit.provider.revoke(spec.sandboxId, { jtis: [] }), 'SANDBOX_NOT_FOUND');
    await expectSbxError(kit.provider.rotateKey(spec.sandboxId, key), 'SANDBOX_NOT_FOUND');
  });

  it('runs operations on one sandbox in order: a destroy issued during create wins', async () => {
    const spec = kubeSpec();
    await Promise.all([kit.provider.create(spec), kit.provider.destroy(spec.sandboxId)]);
    expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
  });

  it('refuses sandbox ids that are not safe names', async () => {
    const escape = await expectSbxError(
      kit.provider.create(kubeSpec({ sandboxId: '../escape' })),
      'BAD_REQUEST',
    );
    expect(escape.status).toBe(400);
    await expectSbxError(kit.provider.status('a/b'), 'BAD_REQUEST');
  });

  it('never writes the key or a sidecar token into its log', async () => {
    const spec = kubeSpec({ sidecar: { image: 'creds-sidecar:1', token: 'secret-pod-jwt-value' } });
    await kit.provider.create(spec);
    await kit.provider.destroy(spec.sandboxId);
    const log = kit.logLines.join('');
    expect(log).not.toContain(spec.signingKey.toBase64url());
    expect(log).not.toContain('secret-pod-jwt-value');
  });
});

describe('contract: kubernetes provider close (fake API server)', () => {
  it('refuses new work and leaves the sandboxes running: they are the cluster’s, not this process’s', async () => {
    const kit = await startKubeKit();
    try {
      const spec = kubeSpec();
      await kit.provider.create(spec);
      await kit.provider.close();
      await expectSbxError(kit.provider.create(kubeSpec()), 'PROVIDER_UNAVAILABLE');
      await expectSbxError(kit.provider.start(spec.sandboxId), 'PROVIDER_UNAVAILABLE');
      await eventually(() => kit.api.watcherCount === 0, 'the pod watch to end');
      expect(objectsOf(kit.api, 'core/pods', spec.sandboxId)).toHaveLength(1);
      expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    } finally {
      await kit.dispose();
    }
  });
});
