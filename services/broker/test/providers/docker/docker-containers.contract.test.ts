// What the Docker engine is asked for when a sandbox is made: hardening, limits, labels, network,
// the key and environment as files, and the client's sidecar only when the policy names one.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SigningKey } from '@sbx/tokens';
import { contractSpec, expectSbxError } from '../provider-contract.js';
import { freePort, startDockerKit, type DockerKit } from './docker-kit.js';

const LIMITS = {
  maxProcesses: 99,
  memoryBytes: 512 * 1024 ** 2,
  cpuMillicores: 1500,
  maxFileBytes: 2 ** 20,
  diskBytes: 2 ** 30,
};

function envPort(env: string[] | undefined): string | undefined {
  return env?.find((e) => e.startsWith('PORT='))?.slice('PORT='.length);
}

describe('contract: docker provider containers (fake engine)', () => {
  let kit: DockerKit;
  beforeAll(async () => {
    kit = await startDockerKit();
  });
  afterAll(async () => {
    await kit.dispose();
  });

  function createdFor(sandboxId: string) {
    return kit.engine.createdContainers().filter((c) => c.Labels?.['sbx.dev/sandbox-id'] === sandboxId);
  }

  // Who runs as whom (the agent's split identity): docker-identity.contract.test.ts.
  it('runs the sandbox hardened, within its limits, labelled with tenant and sandbox', async () => {
    const spec = contractSpec({ tenantId: 'tenant_hard', limits: LIMITS });
    await kit.provider.create(spec);
    const [main, ...others] = createdFor(spec.sandboxId);
    expect(others).toEqual([]);
    expect(main?.Labels).toEqual({
      'sbx.dev/sandbox-id': spec.sandboxId,
      'sbx.dev/tenant-id': 'tenant_hard',
      'sbx.dev/managed-by': 'sbx-broker',
      'sbx.dev/role': 'agent',
    });
    const host = main?.HostConfig;
    expect(host?.ReadonlyRootfs).toBe(true);
    expect(host?.CapDrop).toEqual(['ALL']);
    expect(host?.CapAdd).toEqual(['SETUID', 'SETGID']);
    expect(host?.SecurityOpt).toContain('no-new-privileges:true');
    expect(JSON.stringify(host?.SecurityOpt)).not.toContain('unconfined');
    expect(host?.Privileged).not.toBe(true);
    expect(host).toMatchObject({
      PidsLimit: 99,
      Memory: 512 * 1024 ** 2,
      MemorySwap: 512 * 1024 ** 2,
      NanoCpus: 1_500_000_000,
    });
    expect(host?.Ulimits).toContainEqual({ Name: 'fsize', Soft: 2 ** 20, Hard: 2 ** 20 });
    expect(host?.Tmpfs).toHaveProperty('/tmp');
    expect(host?.Mounts?.map((m) => m.Target).toSorted()).toEqual(['/run/sbx', '/workspace']);
    expect(host?.NetworkMode).toBe('sbx-sandboxes');
    await kit.provider.destroy(spec.sandboxId);
  });

  it('puts network-off sandboxes on the internal network (open() made it internal) and reaches them by IP', async () => {
    const direct = await startDockerKit({ agentAddress: 'container', agentPort: await freePort() });
    try {
      expect(direct.engine.state.networks.get('sbx-internal')?.Internal).toBe(true);
      expect(direct.engine.state.networks.get('sbx-sandboxes')?.Internal).toBe(false);
      const spec = contractSpec({ network: 'off' });
      const { dataplane } = await direct.provider.create(spec);
      const [main] = direct.engine.createdContainers();
      expect(main?.HostConfig?.NetworkMode).toBe('sbx-internal');
      expect(main?.HostConfig?.PortBindings).toBeUndefined();
      expect(dataplane.httpBaseUrl).toBe(
        `http://${direct.engine.state.find(main?.name ?? '').ip}:${envPort(main?.Env)}`,
      );
      expect(await direct.provider.status(spec.sandboxId)).toBe('running');
    } finally {
      await direct.dispose();
    }
  });

  it('refuses network-off sandboxes when agents are reached by published port, making nothing', async () => {
    const spec = contractSpec({ network: 'off' });
    await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
    expect(createdFor(spec.sandboxId)).toEqual([]);
  });

  it('delivers the key as a root-owned file the agent reads, never in the environment or command', async () => {
    const spec = contractSpec({ environment: { API_BASE: 'http://127.0.0.1:9000' } });
    await kit.provider.create(spec);
    const [main] = createdFor(spec.sandboxId);
    const key = spec.signingKey.toBase64url();
    expect(JSON.stringify(kit.engine.createdContainers())).not.toContain(key);
    expect(main?.Env).toEqual(
      expect.arrayContaining(['SANDBOX_SIGNING_KEY_FILE=/run/sbx/agent.key', `SANDBOX_ID=${spec.sandboxId}`]),
    );
    const container = kit.engine.state.find(main?.name ?? '');
    const keyFile = kit.engine.state.fileOf(container, '/run/sbx/agent.key');
    expect(keyFile?.content.toString()).toBe(key);
    expect(keyFile).toMatchObject({ uid: 0, gid: 1001, mode: 0o440 });
    const envFile = kit.engine.state.fileOf(container, '/run/sbx/sandbox-env.json');
    expect(JSON.parse(envFile?.content.toString() ?? '')).toEqual({ API_BASE: 'http://127.0.0.1:9000' });
    expect(main?.Env).toContain('AGENT_SANDBOX_ENV_FILE=/run/sbx/sandbox-env.json');
    // Delivered before the first start: the agent never looks for a key that is not there yet.
    const paths = kit.engine.requests.map((r) => `${r.method} ${r.path}`);
    expect(paths.indexOf(`PUT /containers/${main?.name}/archive`)).toBeLessThan(
      paths.indexOf(`POST /containers/${main?.name}/start`),
    );
    await kit.provider.destroy(spec.sandboxId);
  });

  it('writes an empty environment file for a client without a policy row, and adds no sidecar', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const created = createdFor(spec.sandboxId);
    expect(created.map((c) => c.Labels?.['sbx.dev/role'])).toEqual(['agent']);
    const container = kit.engine.state.find(created[0]?.name ?? '');
    expect(kit.engine.state.fileOf(container, '/run/sbx/sandbox-env.json')?.content.toString()).toBe('{}');
    await kit.provider.destroy(spec.sandboxId);
  });

  it('adds the client sidecar in the sandbox network with its token as a file the user container never mounts', async () => {
    const token = 'eyJ.sidecar-token.sig';
    const spec = contractSpec({
      sidecar: { image: 'credential-broker:1', token },
      environment: { VAULT_ADDR: 'http://127.0.0.1:8200' },
    });
    await kit.provider.create(spec);
    const [main, sidecar] = createdFor(spec.sandboxId);
    const mainId = kit.engine.state.find(main?.name ?? '').id;
    expect(sidecar).toMatchObject({ Image: 'credential-broker:1', User: '1000:1000' });
    expect(sidecar?.Labels?.['sbx.dev/role']).toBe('sidecar');
    expect(sidecar?.HostConfig).toMatchObject({
      NetworkMode: `container:${mainId}`,
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
    });
    expect(sidecar?.HostConfig?.SecurityOpt).toContain('no-new-privileges:true');
    expect(JSON.stringify(kit.engine.createdContainers())).not.toContain(token);
    const sidecarContainer = kit.engine.state.find(sidecar?.name ?? '');
    const tokenFile = kit.engine.state.fileOf(sidecarContainer, '/run/sbx-sidecar/token');
    expect(tokenFile?.content.toString()).toBe(token);
    const sidecarVolume = sidecar?.HostConfig?.Mounts?.[0]?.Source;
    expect(main?.HostConfig?.Mounts?.map((m) => m.Source)).not.toContain(sidecarVolume);
    expect(sidecarContainer.status).toBe('running');
    await kit.provider.destroy(spec.sandboxId);
    expect(() => kit.engine.state.find(sidecar?.name ?? '')).toThrow('No such container');
  });

  it('maps a template to its image; any other template gets the default image', async () => {
    const templated = await startDockerKit({ templateImages: { python: 'sbx-python:3' } });
    try {
      const spec = contractSpec({ template: 'python' });
      await templated.provider.create(spec);
      expect(templated.engine.createdContainers()[0]?.Image).toBe('sbx-python:3');
      const other = contractSpec({ template: 'other', signingKey: SigningKey.generate() });
      await templated.provider.create(other);
      expect(templated.engine.createdContainers()[1]?.Image).toBe('sbx-agent:test');
    } finally {
      await templated.dispose();
    }
  });
});
