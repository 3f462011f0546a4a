// What an operator sees when the engine or the agent fails: PROVIDER_UNAVAILABLE with a message
// of the provider's own, and nothing left behind by a sandbox that never came up.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DockerProvider } from '../../../src/providers/docker/docker-provider.js';
import { captureLogger } from '../local-provider-kit.js';
import { contractSpec, expectSbxError } from '../provider-contract.js';
import { startDockerKit, type DockerKit } from './docker-kit.js';
import { FakeDockerEngine } from './fake-docker-engine.js';

describe('contract: docker provider failures (fake engine)', () => {
  let kit: DockerKit;
  beforeAll(async () => {
    kit = await startDockerKit({ startTimeoutMs: 1500 });
  });
  afterAll(async () => {
    await kit.dispose();
  });

  function leftovers(sandboxId: string) {
    const containers = [...kit.engine.state.byId.values()].filter(
      (c) => c.body.Labels?.['sbx.dev/sandbox-id'] === sandboxId,
    );
    const volumes = [...kit.engine.state.volumes.keys()].filter((v) =>
      v.includes(sandboxId.replaceAll(':', '_')),
    );
    return [...containers.map((c) => c.name), ...volumes];
  }

  it('removes a sandbox whose agent never becomes healthy, and rejects the create', async () => {
    kit.engine.state.agentBehaviour = 'silent';
    try {
      const spec = contractSpec();
      const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      expect(error.message).toContain(`sandbox ${spec.sandboxId} did not start`);
      expect(leftovers(spec.sandboxId)).toEqual([]);
      expect(await kit.provider.status(spec.sandboxId)).toBe('missing');
    } finally {
      kit.engine.state.agentBehaviour = 'healthy';
    }
  });

  it('gives up as soon as the container exits, naming its exit code', async () => {
    kit.engine.state.agentBehaviour = 'exits';
    try {
      const spec = contractSpec();
      const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
      expect(error.message).toContain('exited with code 1');
      expect(leftovers(spec.sandboxId)).toEqual([]);
    } finally {
      kit.engine.state.agentBehaviour = 'healthy';
    }
  });

  it('maps engine errors to PROVIDER_UNAVAILABLE without the engine text or a stack', async () => {
    kit.engine.failNext('POST', /^\/containers\/create$/, 500, 'driver failed: secret-internal-detail');
    const spec = contractSpec();
    const error = await expectSbxError(kit.provider.create(spec), 'PROVIDER_UNAVAILABLE');
    expect(error.message).toBe(
      `the docker engine could not create the container of sandbox ${spec.sandboxId} (HTTP 500)`,
    );
    expect(error.message).not.toMatch(/secret-internal-detail|\n\s+at /);
    expect(leftovers(spec.sandboxId)).toEqual([]);
    kit.engine.failNext('POST', /\/stop$/, 500, 'boom');
    const running = contractSpec();
    await kit.provider.create(running);
    await expectSbxError(kit.provider.stop(running.sandboxId), 'PROVIDER_UNAVAILABLE');
    kit.engine.failNext('PUT', /\/archive$/, 500, 'boom');
    await expectSbxError(kit.provider.revoke(running.sandboxId, { jtis: [] }), 'PROVIDER_UNAVAILABLE');
    await kit.provider.destroy(running.sandboxId);
  });

  it('answers CONFLICT, removing nothing, when another broker holds the name meanwhile', async () => {
    const spec = contractSpec();
    await kit.provider.create(spec);
    const other = await kit.reopen();
    // The other broker looked before the container existed: the engine refuses the name.
    kit.engine.failNext('GET', /^\/containers\/[^/]+\/json$/, 404, 'No such container');
    await expectSbxError(other.create({ ...spec }), 'CONFLICT');
    expect(await kit.provider.status(spec.sandboxId)).toBe('running');
    await kit.provider.destroy(spec.sandboxId);
  });

  it('says when the image is missing from the engine', async () => {
    const missing = await startDockerKit({ image: 'missing-image:1' });
    try {
      const error = await expectSbxError(missing.provider.create(contractSpec()), 'PROVIDER_UNAVAILABLE');
      expect(error.message).toContain('the image is not on the engine');
    } finally {
      await missing.dispose();
    }
  });

  it('refuses to open without an engine, or with an internal network that is not internal', async () => {
    const logs: string[] = [];
    await expectSbxError(
      DockerProvider.open({ logger: captureLogger(logs), dockerHost: 'unix:///nonexistent/docker.sock' }),
      'PROVIDER_UNAVAILABLE',
    );
    await expectSbxError(
      DockerProvider.open({ logger: captureLogger(logs), dockerHost: 'ssh://host' }),
      'PROVIDER_UNAVAILABLE',
    );
    const engine = await FakeDockerEngine.start();
    try {
      engine.state.networks.set('sbx-internal', { Id: 'n1', Name: 'sbx-internal', Internal: false });
      const error = await expectSbxError(
        DockerProvider.open({ logger: captureLogger(logs), dockerHost: engine.dockerHost }),
        'PROVIDER_UNAVAILABLE',
      );
      expect(error.message).toContain('not internal');
    } finally {
      await engine.close();
    }
  });
});
