// deploy/compose.yaml, read as compose reads it (no engine runs here): the services and their
// start order, the sandbox networks the docker provider attaches to by name, the docker socket
// on the broker alone, and no secret written into the file.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { readYamlDocuments, ROOT } from './manifests.js';

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
  networks?: string[];
  network_mode?: string;
  healthcheck?: { test: string[] };
  read_only?: boolean;
  cap_drop?: string[];
  security_opt?: string[];
  privileged?: boolean;
}

interface Compose {
  services: Record<string, Service>;
  networks: Record<string, { name?: string; internal?: boolean }>;
}

const COMPOSE_FILE = path.join(ROOT, 'deploy', 'compose.yaml');
const compose = readYamlDocuments(COMPOSE_FILE)[0] as Compose;
const service = (name: string): Service => {
  const found = compose.services[name];
  if (found === undefined) throw new Error(`no service ${name}`);
  return found;
};
const broker = service('broker');
const env = broker.environment ?? {};

/** The broker's settings: config.ts's, and the docker provider's of the agent contract. */
const BROKER_CONFIG_SOURCE = readFileSync(path.join(ROOT, 'services/broker/src/config.ts'), 'utf8');
const PROVIDER_SETTINGS = [
  'SANDBOX_IMAGE',
  'DOCKER_HOST',
  'DOCKER_NETWORK',
  'DOCKER_INTERNAL_NETWORK',
  'DOCKER_AGENT_ADDRESS',
];

/** The network a service names, by the name docker gives it (`name:` or the key). */
const dockerName = (key: string): string => compose.networks[key]?.name ?? key;
const brokerNetworks = (broker.networks ?? []).map((key) => ({ key, name: dockerName(key) }));

describe('deploy/compose.yaml', () => {
  it('has postgres, redis, the broker and the build-only agent image', () => {
    expect(Object.keys(compose.services).toSorted()).toEqual(['agent-image', 'broker', 'postgres', 'redis']);
    for (const name of ['postgres', 'redis', 'broker'])
      expect(service(name).healthcheck?.test.length).toBeGreaterThan(0);
  });

  it('starts the broker after a healthy postgres and redis, and once the agent image is built', () => {
    expect(broker.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
      'agent-image': { condition: 'service_completed_successfully' },
    });
  });

  it('builds both images from the repository root with the Dockerfiles of deploy/docker', () => {
    for (const [name, dockerfile] of [
      ['broker', 'deploy/docker/broker.Dockerfile'],
      ['agent-image', 'deploy/docker/agent.Dockerfile'],
    ] as const) {
      const build = service(name).build;
      expect(build?.dockerfile).toBe(dockerfile);
      expect(path.resolve(path.dirname(COMPOSE_FILE), build?.context ?? '')).toBe(path.resolve(ROOT));
      expect(existsSync(path.join(ROOT, dockerfile))).toBe(true);
    }
    // The image the broker starts sandboxes from is the one this file builds.
    expect(env['SANDBOX_IMAGE']).toBe(service('agent-image').image);
    expect(service('agent-image').network_mode).toBe('none');
  });

  it('runs the docker provider on the networks the broker is attached to', () => {
    expect(env['SANDBOX_PROVIDER']).toBe('docker');
    expect(env['DOCKER_AGENT_ADDRESS']).toBe('container');
    const names = brokerNetworks.map((network) => network.name);
    expect(names).toEqual(expect.arrayContaining([env['DOCKER_NETWORK'], env['DOCKER_INTERNAL_NETWORK']]));
    expect(env['DOCKER_NETWORK']).toBe('sbx-sandboxes');
    expect(env['DOCKER_INTERNAL_NETWORK']).toBe('sbx-internal');
  });

  it('makes the internal-only sandbox network internal (no egress), and the network-on one not', () => {
    const byName = (name: string | undefined) => brokerNetworks.find((network) => network.name === name)!;
    expect(compose.networks[byName(env['DOCKER_INTERNAL_NETWORK']).key]?.internal).toBe(true);
    expect(compose.networks[byName(env['DOCKER_NETWORK']).key]?.internal ?? false).toBe(false);
  });

  it('keeps postgres and redis off the sandbox networks and off any route out', () => {
    const sandboxKeys = brokerNetworks
      .filter((network) => [env['DOCKER_NETWORK'], env['DOCKER_INTERNAL_NETWORK']].includes(network.name))
      .map((network) => network.key);
    for (const name of ['postgres', 'redis']) {
      const networks = service(name).networks ?? [];
      expect(networks.length).toBeGreaterThan(0);
      for (const key of networks) {
        expect(sandboxKeys).not.toContain(key);
        expect(compose.networks[key]?.internal).toBe(true);
      }
    }
  });

  it('mounts the docker socket on the broker only, where DOCKER_HOST points', () => {
    const socketMounts = Object.entries(compose.services).flatMap(([name, s]) =>
      (s.volumes ?? []).filter((volume) => volume.includes('docker.sock')).map((volume) => [name, volume]),
    );
    expect(socketMounts).toEqual([['broker', '/var/run/docker.sock:/var/run/docker.sock']]);
    expect(env['DOCKER_HOST']).toBe('unix:///var/run/docker.sock');
  });

  it('hardens the broker container: read-only root, no capabilities, no new privileges', () => {
    expect(broker.read_only).toBe(true);
    expect(broker.cap_drop).toEqual(['ALL']);
    expect(broker.security_opt).toContain('no-new-privileges:true');
    expect(Object.values(compose.services).some((s) => s.privileged === true)).toBe(false);
  });

  it('writes no secret into the file: passwords and keys come from the environment', () => {
    const settings = Object.entries(compose.services).flatMap(([name, s]) =>
      Object.entries(s.environment ?? {}).map(([key, value]) => ({ name, key, value })),
    );
    const interpolated = /^\$\{[A-Z_]+[:?-]/;
    const literalSecrets = settings.filter(
      ({ key, value }) => /PASSWORD|KEY|SECRET|TOKEN/.test(key) && !interpolated.test(value),
    );
    expect(literalSecrets).toEqual([]);
    const passwords = settings.flatMap(({ value }) => /:\/\/[^:/@]+:([^@]+)@/.exec(value)?.[1] ?? []);
    expect(passwords.length).toBeGreaterThan(0); // DATABASE_URL carries one
    expect(passwords.filter((password) => !interpolated.test(password))).toEqual([]);
    expect(env['BROKER_MASTER_KEY']).toMatch(/^\$\{BROKER_MASTER_KEY:\?/); // refuses to start without one
  });

  it('sets only settings the broker reads', () => {
    for (const name of Object.keys(env)) {
      const known = PROVIDER_SETTINGS.includes(name) || new RegExp(`\\b${name}:`).test(BROKER_CONFIG_SOURCE);
      expect([name, known]).toEqual([name, true]);
    }
  });
});
