// contract: who runs what in a sandbox's pod (fake API server, no cluster here). The agent's
// identity is split (docs/provider-kubernetes.md, D22): its container starts as root with
// CAP_SETUID and CAP_SETGID alone, for the image's setpriv; fsGroup is the agent's group
// 1001, so the Secret's files are root:1001 0440; an init step gives the workspace's root to
// the user (1000); the sidecar stays uid 1000 as before.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { expectSbxError } from '../provider-contract.js';
import { kubeSpec, objectsOf, startKubeKit, type KubeKit } from './kube-kit.js';

const CONFINED = {
  privileged: false,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  seccompProfile: { type: 'RuntimeDefault' },
};

describe('contract: kubernetes sandbox identities (fake API server)', () => {
  let kit: KubeKit;
  beforeAll(async () => {
    kit = await startKubeKit({ templateImages: { python: 'sbx-agent-python:3' } });
  });
  afterAll(async () => {
    await kit.dispose();
  });

  function sentPod(sandboxId: string): V1Pod & { spec: V1PodSpec } {
    const pod = kit.api.sent('POST', '/pods').find((body) => JSON.stringify(body).includes(sandboxId));
    if (pod === undefined) throw new Error(`no pod was created for ${sandboxId}`);
    return pod as V1Pod & { spec: V1PodSpec };
  }
  const container = (pod: V1Pod & { spec: V1PodSpec }, name: string): V1Container | undefined =>
    pod.spec.containers.find((c) => c.name === name);

  it('starts the agent as root with CAP_SETUID and CAP_SETGID only; the sidecar stays uid 1000', async () => {
    const spec = kubeSpec({ sidecar: { image: 'creds-sidecar:1', token: 'pod-jwt' } });
    await kit.provider.create(spec);
    const pod = sentPod(spec.sandboxId);
    // No user at the pod level: each container names its own.
    expect(pod.spec.securityContext).toEqual({
      fsGroup: 1001,
      fsGroupChangePolicy: 'OnRootMismatch',
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const agent = container(pod, 'agent');
    expect(agent?.securityContext).toEqual({
      runAsNonRoot: false,
      runAsUser: 0,
      runAsGroup: 0,
      capabilities: { drop: ['ALL'], add: ['SETUID', 'SETGID'] },
      ...CONFINED,
    });
    // The image's entrypoint (setpriv … tini … node) does the split: nothing overrides it.
    expect(agent?.command).toBeUndefined();
    expect(agent?.args).toBeUndefined();
    expect((agent?.env ?? []).map((e) => e.name).filter((n) => n.startsWith('AGENT_RUN_AS'))).toEqual([]);
    expect(container(pod, 'sidecar')?.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      capabilities: { drop: ['ALL'] },
      ...CONFINED,
    });
    await kit.provider.destroy(spec.sandboxId);
  });

  it("makes the Secret's files root:1001 0440 (fsGroup): the agent's group reads them, user code not", async () => {
    const spec = kubeSpec({ sidecar: { image: 'creds-sidecar:1', token: 'pod-jwt' } });
    await kit.provider.create(spec);
    const pod = sentPod(spec.sandboxId);
    expect(pod.spec.securityContext?.fsGroup).toBe(1001);
    const secretVolumes = (pod.spec.volumes ?? []).filter((v) => v.secret !== undefined);
    expect(secretVolumes.map((v) => [v.name, v.secret?.defaultMode])).toEqual([
      ['keys', 0o440],
      // The sidecar (uid 1000) gets fsGroup as a supplementary group; the agent never mounts this.
      ['sidecar-token', 0o440],
    ]);
    const [secret] = objectsOf(kit.api, 'core/secrets', spec.sandboxId).filter(
      (s) => !s.metadata.name.endsWith('-sidecar'),
    );
    expect(Object.keys(secret?.['data'] as object).toSorted()).toEqual([
      'agent.key',
      'revocations.json',
      'sandbox-env.json',
    ]);
    // The stand-in agent reads its key only as uid and gid 1001 could: create resolved, so it did.
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.destroy(spec.sandboxId);
  });

  it("gives the workspace's root to the user in an init step: chown of the mount point, CAP_CHOWN only", async () => {
    const spec = kubeSpec({ template: 'python' });
    await kit.provider.create(spec);
    const pod = sentPod(spec.sandboxId);
    expect(pod.spec.initContainers).toEqual([
      {
        name: 'workspace-owner',
        image: 'sbx-agent-python:3', // the sandbox's own image: nothing else to pull
        imagePullPolicy: 'IfNotPresent',
        // The owner only: the group stays kubelet's (fsGroup), so OnRootMismatch skips the walk.
        command: ['chown', '1000', '/workspace'],
        resources: expect.any(Object),
        securityContext: {
          runAsNonRoot: false,
          runAsUser: 0,
          runAsGroup: 0,
          capabilities: { drop: ['ALL'], add: ['CHOWN'] },
          ...CONFINED,
        },
        // The workspace alone: never the key.
        volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }],
      },
    ]);
    expect(pod.spec.volumes).toContainEqual(
      expect.objectContaining({ name: 'workspace', persistentVolumeClaim: expect.any(Object) }),
    );
    await kit.provider.destroy(spec.sandboxId);
  });

  it('fails a create whose init step fails, naming it, and leaves nothing behind', async () => {
    const spec = kubeSpec();
    kit.api.kubelet = 'init-fails';
    try {
      const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      expect((error.cause as Error).message).toMatch(/pod ended.*Failed.*workspace-owner: Error/);
    } finally {
      kit.api.kubelet = 'run';
    }
    const left = ['core/secrets', 'core/persistentvolumeclaims', 'core/services', 'core/pods'].flatMap((c) =>
      objectsOf(kit.api, c, spec.sandboxId),
    );
    expect(left).toEqual([]);
  });
});
