// contract: SANDBOX_PROVIDER chooses the provider the broker opens, configured by the
// environment alone (config.ts → open-provider.ts). The Docker engine and the Kubernetes
// API server are FAKES (no engine or cluster runs here): the fakes of the providers' own
// contract tests, reached through DOCKER_HOST and a KUBECONFIG file as an operator would.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '@sbx/service-kit';
import { loadBrokerConfig } from '../../src/config.js';
import { openProvider } from '../../src/providers/open-provider.js';
import { FakeDockerEngine } from './docker/fake-docker-engine.js';
import { FakeKubeApi } from './kubernetes/fake-kube-api.js';

const context = {
  logger: createLogger({ service: 'open-provider-test', level: 'silent' }),
  onAgentExit: () => undefined,
  introspectionUrl: undefined,
};

describe('contract: the provider SANDBOX_PROVIDER names (fake engine and API server)', () => {
  let engine: FakeDockerEngine;
  let kube: FakeKubeApi;
  const dir = mkdtempSync(path.join(tmpdir(), 'sbx-open-provider-'));
  beforeAll(async () => {
    [engine, kube] = await Promise.all([FakeDockerEngine.start(), FakeKubeApi.start()]);
  });
  afterAll(async () => {
    await Promise.all([engine.close(), kube.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens the docker provider on DOCKER_HOST, with its networks', async () => {
    const config = loadBrokerConfig({
      SANDBOX_PROVIDER: 'docker',
      DOCKER_HOST: engine.dockerHost,
      DOCKER_NETWORK: 'team-sandboxes',
      BROKER_DATA_DIR: dir,
    });
    const provider = await openProvider(config, context);
    try {
      expect([provider.name, provider.isolation]).toEqual(['docker', 'container']);
      const asked = engine.requests.map((req) => `${req.method} ${req.path}`);
      expect(asked).toContain('GET /_ping');
      expect(engine.requests.some((req) => req.body.toString().includes('team-sandboxes'))).toBe(true);
    } finally {
      await provider.close();
    }
  });

  it('opens the kubernetes provider from KUBECONFIG in K8S_NAMESPACE', async () => {
    const kubeconfig = path.join(dir, 'kubeconfig.json');
    writeFileSync(kubeconfig, kube.kubeConfig().exportConfig());
    const config = loadBrokerConfig({
      SANDBOX_PROVIDER: 'kubernetes',
      KUBECONFIG: kubeconfig,
      K8S_NAMESPACE: 'team-sandboxes',
      BROKER_DATA_DIR: dir,
    });
    const provider = await openProvider(config, context);
    try {
      expect([provider.name, provider.isolation]).toEqual(['kubernetes', 'container']);
      expect(await provider.list()).toEqual([]);
      expect(kube.requests.some((req) => req.path.includes('/namespaces/team-sandboxes/'))).toBe(true);
    } finally {
      await provider.close();
    }
  });

  it('names each bad provider variable and opens nothing', () => {
    let message = '';
    try {
      loadBrokerConfig({ SANDBOX_PROVIDER: 'nomad', DOCKER_HOST: 'ssh://host', K8S_NAMESPACE: 'Bad_NS' });
    } catch (err) {
      message = String(err);
    }
    for (const name of ['SANDBOX_PROVIDER', 'DOCKER_HOST', 'K8S_NAMESPACE']) expect(message).toContain(name);
  });
});
