// contract: what the Kubernetes provider sends the API server for a sandbox (fake API server,
// no cluster here): hardened containers, the key only as a Secret file, the client policy's
// sidecar only when the policy names one, its token where only the sidecar sees it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { decodeData, kubeSpec, objectsOf, startKubeKit, type KubeKit } from './kube-kit.js';

const LIMITS = {
  maxProcesses: 64,
  memoryBytes: 512 * 1024 ** 2,
  cpuMillicores: 500,
  maxFileBytes: 1024 ** 3,
  diskBytes: 3 * 1024 ** 3,
};

describe('contract: kubernetes sandbox manifests (fake API server)', () => {
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

  // Who each container runs as (the agent's split identity): kubernetes-identity.contract.test.ts.
  it('runs every container unprivileged, seccomp-confined, read-only, within spec.limits', async () => {
    const spec = kubeSpec({ limits: LIMITS, sidecar: { image: 'creds-sidecar:1', token: 'pod-jwt' } });
    await kit.provider.create(spec);
    const pod = sentPod(spec.sandboxId);
    expect(pod.spec).toMatchObject({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      restartPolicy: 'Never',
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
    });
    expect(pod.spec.containers.map((c) => c.name)).toEqual(['agent', 'sidecar']);
    for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])])
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        privileged: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
    expect(container(pod, 'agent')?.resources?.limits).toEqual({
      cpu: '500m',
      memory: String(512 * 1024 ** 2),
    });
    // Writable: the workspace (its own PVC, of the policy's disk size) and /tmp; nothing else.
    const mounts = container(pod, 'agent')?.volumeMounts ?? [];
    expect(
      mounts
        .filter((m) => m.readOnly !== true)
        .map((m) => m.mountPath)
        .toSorted(),
    ).toEqual(['/tmp', '/workspace']);
    const [claim] = objectsOf(kit.api, 'core/persistentvolumeclaims', spec.sandboxId);
    expect(claim?.['spec']).toMatchObject({ resources: { requests: { storage: String(3 * 1024 ** 3) } } });
    await kit.provider.destroy(spec.sandboxId);
  });

  it('gives the agent its key only as a file from the Secret, never in env or args', async () => {
    const spec = kubeSpec({ environment: { API_BASE_URL: 'http://127.0.0.1:9000' } });
    await kit.provider.create(spec);
    const pod = sentPod(spec.sandboxId);
    const agent = container(pod, 'agent');
    const env = Object.fromEntries((agent?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      SANDBOX_ID: spec.sandboxId,
      SANDBOX_SIGNING_KEY_FILE: '/run/sbx/agent.key',
      AGENT_SANDBOX_ENV_FILE: '/run/sbx/sandbox-env.json',
      WORKSPACE_ROOT: '/workspace',
      HOST: '0.0.0.0',
      PORT: '8080',
      AGENT_LAUNCHER: 'direct',
    });
    expect(env).not.toHaveProperty('SANDBOX_SIGNING_KEY');
    expect(JSON.stringify(pod)).not.toContain(spec.signingKey.toBase64url());
    expect(agent?.volumeMounts).toContainEqual({ name: 'keys', mountPath: '/run/sbx', readOnly: true });
    const [secret] = objectsOf(kit.api, 'core/secrets', spec.sandboxId);
    expect(pod.spec.volumes).toContainEqual(
      expect.objectContaining({
        name: 'keys',
        secret: expect.objectContaining({ secretName: secret?.metadata.name }),
      }),
    );
    expect(decodeData(secret, 'agent.key')).toBe(spec.signingKey.toBase64url());
    // The client policy's variables, for every user process, as the agent reads them.
    expect(JSON.parse(decodeData(secret, 'sandbox-env.json'))).toEqual({
      API_BASE_URL: 'http://127.0.0.1:9000',
    });
    await kit.provider.destroy(spec.sandboxId);
  });

  it('adds no sidecar for a client without a policy row', async () => {
    const spec = kubeSpec();
    await kit.provider.create(spec);
    const pod = sentPod(spec.sandboxId);
    expect(pod.spec.containers.map((c) => c.name)).toEqual(['agent']);
    expect(pod.spec.volumes?.map((v) => v.name)).not.toContain('sidecar-token');
    expect(objectsOf(kit.api, 'core/secrets', spec.sandboxId)).toHaveLength(1);
    await kit.provider.destroy(spec.sandboxId);
  });

  it('gives the sidecar its pod-scoped token in its own Secret volume, which the agent container never mounts', async () => {
    const token = 'eyJhbGciOiJIUzI1NiJ9.pod-scoped.jwt';
    const spec = kubeSpec({
      sidecar: { image: 'creds-sidecar:1', token },
      environment: { OPENAI_BASE_URL: 'http://127.0.0.1:4000' },
    });
    await kit.provider.create(spec);
    const pod = sentPod(spec.sandboxId);
    const sidecar = container(pod, 'sidecar');
    expect(sidecar?.image).toBe('creds-sidecar:1');
    expect(sidecar?.volumeMounts).toContainEqual({
      name: 'sidecar-token',
      mountPath: '/run/sbx-sidecar',
      readOnly: true,
    });
    expect(container(pod, 'agent')?.volumeMounts?.map((m) => m.name)).not.toContain('sidecar-token');
    expect(JSON.stringify(pod)).not.toContain(token);
    const secrets = objectsOf(kit.api, 'core/secrets', spec.sandboxId);
    const tokenSecret = secrets.find((s) => s.metadata.name.endsWith('-sidecar'));
    const keySecret = secrets.find((s) => !s.metadata.name.endsWith('-sidecar'));
    expect(decodeData(tokenSecret, 'token')).toBe(token);
    expect(JSON.stringify(keySecret)).not.toContain(Buffer.from(token).toString('base64'));
    expect(pod.spec.volumes).toContainEqual(
      expect.objectContaining({
        name: 'sidecar-token',
        secret: expect.objectContaining({ secretName: tokenSecret?.metadata.name }),
      }),
    );
    expect(JSON.parse(decodeData(keySecret, 'sandbox-env.json'))).toEqual({
      OPENAI_BASE_URL: 'http://127.0.0.1:4000',
    });
    await kit.provider.destroy(spec.sandboxId);
  });

  it('labels pods for the NetworkPolicies: internal-only sandboxes are network=off', async () => {
    const [on, off] = [kubeSpec(), kubeSpec({ network: 'off', tenantId: 'tenant_internal' })];
    await Promise.all([kit.provider.create(on), kit.provider.create(off)]);
    expect(sentPod(on.sandboxId).metadata?.labels).toMatchObject({
      'sbx.dev/network': 'on',
      'sbx.dev/managed-by': 'sbx-broker',
    });
    expect(sentPod(off.sandboxId).metadata?.labels).toMatchObject({
      'sbx.dev/network': 'off',
      'sbx.dev/tenant-id': 'tenant_internal',
      'sbx.dev/sandbox-id': off.sandboxId,
    });
    await Promise.all([kit.provider.destroy(on.sandboxId), kit.provider.destroy(off.sandboxId)]);
  });

  it('maps a listed template to its image, any other to the default image', async () => {
    const [python, other] = [kubeSpec({ template: 'python' }), kubeSpec({ template: 'unlisted' })];
    await Promise.all([kit.provider.create(python), kit.provider.create(other)]);
    expect(container(sentPod(python.sandboxId), 'agent')?.image).toBe('sbx-agent-python:3');
    expect(container(sentPod(other.sandboxId), 'agent')?.image).toBe('sbx-agent:latest');
    await Promise.all([kit.provider.destroy(python.sandboxId), kit.provider.destroy(other.sandboxId)]);
  });
});
