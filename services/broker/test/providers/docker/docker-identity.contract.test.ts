// contract: who runs what in a sandbox's containers (fake engine, no Docker here). The agent's
// identity is split (docs/provider-docker.md, D22): its container starts as root with
// CAP_SETUID and CAP_SETGID alone, for the image's setpriv; its own files are root:1001 0440,
// readable by its real group and not by user code (1000); the sidecar is unchanged.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { unpackTar } from '../../../src/providers/docker/tar-archive.js';
import { contractSpec } from '../provider-contract.js';
import { startDockerKit, type DockerKit } from './docker-kit.js';

describe('contract: docker sandbox identities (fake engine)', () => {
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

  /** Every file the engine was asked to extract into `container`, as the archives said. */
  function archivedInto(name: string) {
    const { id } = kit.engine.state.find(name);
    return kit.engine
      .requestsTo('PUT', /^\/containers\/[^/]+\/archive$/)
      .filter((request) => [name, id].includes(request.path.split('/')[2] ?? ''))
      .flatMap((request) =>
        unpackTar(request.body).map((entry) => ({ ...entry, dir: request.query.get('path') })),
      );
  }

  it('starts the agent container as root with CAP_SETUID and CAP_SETGID only, the rest as hardened', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const [main] = createdFor(spec.sandboxId);
    expect(main?.User).toBe('0:0');
    expect(main?.HostConfig).toMatchObject({
      CapDrop: ['ALL'],
      CapAdd: ['SETUID', 'SETGID'],
      Privileged: false,
      ReadonlyRootfs: true,
      SecurityOpt: ['no-new-privileges:true'],
    });
    // The image's entrypoint (setpriv … tini … node) does the split: nothing overrides it.
    expect(main?.Entrypoint).toBeUndefined();
    expect(main?.Cmd).toBeUndefined();
    expect(main?.Healthcheck).toBeUndefined();
    expect((main?.Env ?? []).filter((e) => e.startsWith('AGENT_RUN_AS'))).toEqual([]);
    // A new workspace volume takes the image's /workspace (the user's, 1000:1000); the key
    // volume's root stays the engine's (root, 0755): the user traverses it, writes nothing.
    expect(main?.HostConfig?.Mounts?.map((m) => [m.Target, m.VolumeOptions?.NoCopy])).toEqual([
      ['/workspace', false],
      ['/run/sbx', true],
    ]);
    await kit.provider.destroy(spec.sandboxId);
  });

  it("writes the agent's own files root:1001 0440: its group reads them, user code cannot", async () => {
    const spec = contractSpec({ environment: { API_BASE: 'http://127.0.0.1:9000' } });
    await kit.provider.create(spec);
    await kit.provider.revoke(spec.sandboxId, {
      jtis: [{ jti: 'tok_a', expiresAt: new Date(Date.now() + 60_000) }],
    });
    const [main] = createdFor(spec.sandboxId);
    const files = archivedInto(main?.name ?? '');
    expect(files.map((f) => f.name).toSorted()).toEqual([
      'agent.key',
      'revocations.json',
      'sandbox-env.json',
    ]);
    for (const file of files) expect(file).toMatchObject({ dir: '/run/sbx', uid: 0, gid: 1001, mode: 0o440 });
    // The fake agent reads its key only as uid and gid 1001 could; it answered the signed probe.
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.destroy(spec.sandboxId);
  });

  it('keeps the sidecar as it was: uid 1000, no capability, its token for its group 1000', async () => {
    const spec = contractSpec({ sidecar: { image: 'credential-broker:1', token: 'eyJ.sidecar.sig' } });
    await kit.provider.create(spec);
    const [, sidecar] = createdFor(spec.sandboxId);
    expect(sidecar?.User).toBe('1000:1000');
    expect(sidecar?.HostConfig?.CapDrop).toEqual(['ALL']);
    expect(sidecar?.HostConfig?.CapAdd).toBeUndefined();
    expect(archivedInto(sidecar?.name ?? '')).toEqual([
      expect.objectContaining({ dir: '/run/sbx-sidecar', name: 'token', uid: 0, gid: 1000, mode: 0o440 }),
    ]);
    await kit.provider.destroy(spec.sandboxId);
  });

  it('keeps writing group 1000 files to a container made before the split, whose agent is the user', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const [main] = createdFor(spec.sandboxId);
    // As an older broker created it: its agent runs as 1000:1000 and reads through group 1000.
    kit.engine.state.find(main?.name ?? '').body.User = '1000:1000';
    await kit.provider.revoke(spec.sandboxId, {
      jtis: [{ jti: 'tok_old', expiresAt: new Date(Date.now() + 60_000) }],
    });
    const written = archivedInto(main?.name ?? '').filter((file) => file.name === 'revocations.json');
    expect(written.at(-1)).toMatchObject({ uid: 0, gid: 1000, mode: 0o440 });
    await kit.provider.destroy(spec.sandboxId);
  });
});
