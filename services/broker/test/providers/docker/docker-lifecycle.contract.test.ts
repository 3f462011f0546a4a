// Suspend, resume, destroy, status, list and revocation as the Docker engine sees them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SigningKey } from '@sbx/tokens';
import { contractSpec, expectSbxError } from '../provider-contract.js';
import { startDockerKit, type DockerKit } from './docker-kit.js';

describe('contract: docker provider lifecycle (fake engine)', () => {
  let kit: DockerKit;
  beforeAll(async () => {
    kit = await startDockerKit();
  });
  afterAll(async () => {
    await kit.dispose();
  });

  const mainOf = (sandboxId: string) =>
    [...kit.engine.state.byId.values()].find(
      (c) => c.body.Labels?.['sbx.dev/sandbox-id'] === sandboxId && c.body.Labels['sbx.dev/role'] === 'agent',
    );

  it('stops the container keeping its volumes; start resumes it with the same key', async () => {
    const spec = contractSpec({ sidecar: { image: 'credential-broker:1', token: 'tok' } });
    await kit.provider.create(spec);
    const volumesBefore = [...kit.engine.state.volumes.keys()].toSorted();
    await kit.provider.stop(spec.sandboxId);
    expect(mainOf(spec.sandboxId)?.status).toBe('exited');
    expect([...kit.engine.state.volumes.keys()].toSorted()).toEqual(volumesBefore);
    const dataplane = await kit.provider.start(spec.sandboxId);
    expect(mainOf(spec.sandboxId)?.status).toBe('running');
    // The agent answered the broker's probe signed with the key delivered at create.
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    expect((await fetch(`${dataplane.httpBaseUrl}/healthz`)).status).toBe(200);
    await kit.provider.destroy(spec.sandboxId);
  });

  it('destroy removes the containers and every volume, and may be repeated', async () => {
    const spec = contractSpec({ sidecar: { image: 'credential-broker:1', token: 'tok' } });
    await kit.provider.create(spec);
    const volumes = [...kit.engine.state.volumes.keys()].filter((v) =>
      v.includes(spec.sandboxId.replaceAll(':', '_')),
    );
    expect(volumes).toHaveLength(3);
    await kit.provider.destroy(spec.sandboxId);
    await kit.provider.destroy(spec.sandboxId);
    expect(mainOf(spec.sandboxId)).toBeUndefined();
    for (const volume of volumes) expect(kit.engine.state.volumes.has(volume)).toBe(false);
  });

  it('maps container states: running, exited → stopped, OOM-killed or dead → failed, none → missing', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const container = mainOf(spec.sandboxId);
    if (container === undefined) throw new Error('no container');
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.engine.state.stop(container, 0);
    expect(await kit.provider.status(spec.sandboxId)).toBe('stopped');
    container.oomKilled = true;
    expect(await kit.provider.status(spec.sandboxId)).toBe('failed');
    container.status = 'dead';
    expect(await kit.provider.status(spec.sandboxId)).toBe('failed');
    await kit.provider.destroy(spec.sandboxId);
    expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
  });

  it('reports a running container whose agent does not answer as failed, and start replaces it', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const container = mainOf(spec.sandboxId);
    container?.agent?.closeAllConnections();
    await new Promise<void>((resolve) => container?.agent?.close(() => resolve()));
    expect(await kit.provider.status(spec.sandboxId)).toBe('failed');
    await kit.provider.start(spec.sandboxId);
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.destroy(spec.sandboxId);
  });

  it('lists only the sandboxes the broker manages, stopped ones included', async () => {
    const [a, b] = [contractSpec(), contractSpec()];
    await Promise.all([kit.provider.create(a), kit.provider.create(b)]);
    await kit.provider.stop(b.sandboxId);
    kit.engine.state.create('someone-elses', {
      Image: 'nginx',
      Labels: { 'sbx.dev/sandbox-id': 'not-ours' },
    });
    const listed = await kit.provider.list();
    expect(listed).toEqual(expect.arrayContaining([a.sandboxId, b.sandboxId]));
    expect(listed).not.toContain('not-ours');
    const listing = kit.engine.requestsTo('GET', /^\/containers\/json$/).at(-1);
    expect(listing?.query.get('filters')).toContain('sbx.dev/managed-by=sbx-broker');
    await Promise.all([kit.provider.destroy(a.sandboxId), kit.provider.destroy(b.sandboxId)]);
    expect(await kit.provider.list()).not.toContain(a.sandboxId);
  });

  it('lists a sandbox whose container is gone but whose volumes are left, so destroy can remove them', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const container = mainOf(spec.sandboxId);
    if (container === undefined) throw new Error('no container');
    await kit.engine.state.remove(container, true);
    expect(await kit.provider.list()).toContain(spec.sandboxId);
    expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
    await kit.provider.destroy(spec.sandboxId);
    expect(await kit.provider.list()).not.toContain(spec.sandboxId);
  });

  it('writes revocations into the container, merged, running or stopped', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const expiresAt = new Date(Date.now() + 600_000);
    await kit.provider.revoke(spec.sandboxId, { jtis: [{ jti: 'tok_a', expiresAt }] });
    await kit.provider.stop(spec.sandboxId);
    const notBefore = new Date();
    await kit.provider.revoke(spec.sandboxId, { jtis: [{ jti: 'tok_b', expiresAt }], notBefore });
    const container = mainOf(spec.sandboxId);
    if (container === undefined) throw new Error('no container');
    const file = kit.engine.state.fileOf(container, '/run/sbx/revocations.json');
    expect(JSON.parse(file?.content.toString() ?? '')).toEqual({
      version: 1,
      not_before: Math.floor(notBefore.getTime() / 1000),
      jtis: { tok_a: Math.ceil(expiresAt.getTime() / 1000), tok_b: Math.ceil(expiresAt.getTime() / 1000) },
    });
    // The agent's own file: its group (1001) alone reads it, user code (1000) not (D22).
    expect(file).toMatchObject({ uid: 0, gid: 1001, mode: 0o440 });
    await kit.provider.destroy(spec.sandboxId);
  });

  it('replaces the key file on rotation; a restarted broker probes with the key read back', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const rotated = SigningKey.generate();
    await kit.provider.rotateKey(spec.sandboxId, rotated);
    const container = mainOf(spec.sandboxId);
    if (container === undefined) throw new Error('no container');
    const keyFile = kit.engine.state.fileOf(container, '/run/sbx/agent.key');
    expect(keyFile?.content.toString()).toBe(rotated.toBase64url());
    expect(keyFile).toMatchObject({ uid: 0, gid: 1001, mode: 0o440 });
    const restarted = await kit.reopen();
    expect(await restarted.status(spec.sandboxId)).toBe('running');
    expect((await restarted.inspect(spec.sandboxId))?.bootId).toEqual(expect.any(String));
    expect(await restarted.list()).toContain(spec.sandboxId);
    await restarted.destroy(spec.sandboxId);
    await expectSbxError(restarted.revoke(spec.sandboxId, { jtis: [] }), 'SANDBOX_NOT_FOUND');
  });
});
