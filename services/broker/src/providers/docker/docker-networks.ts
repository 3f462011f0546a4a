// The two networks sandboxes join, made when missing. The internal one must really be internal:
// a network-off sandbox on a network with a way out would be a silent policy breach.
import type Docker from 'dockerode';
import { providerUnavailable } from '../provider.js';
import { engineError, isConflict, isNotFound } from './docker-engine.js';
import { LABELS, MANAGED_BY } from './docker-names.js';
import type { DockerSettings } from './docker-settings.js';

async function inspectNetwork(network: Docker.Network): Promise<Docker.NetworkInspectInfo | undefined> {
  try {
    return await network.inspect();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw engineError(`inspect network ${network.id}`, err);
  }
}

async function ensureNetwork(docker: Docker, name: string, internal: boolean): Promise<void> {
  const network = docker.getNetwork(name);
  if ((await inspectNetwork(network)) === undefined) {
    const labels = { [LABELS.managedBy]: MANAGED_BY };
    await docker
      .createNetwork({ Name: name, Driver: 'bridge', Internal: internal, Labels: labels })
      .catch((err: unknown) => {
        // Another broker made it meanwhile: it is checked below like any existing one.
        if (!isConflict(err)) throw engineError(`create network ${name}`, err);
      });
  }
  const info = await inspectNetwork(network);
  if (info === undefined) throw providerUnavailable(`network ${name} could not be created`);
  if (internal && !info.Internal)
    throw providerUnavailable(
      `network ${name} is meant for network-off sandboxes but is not internal (docker network create --internal ${name})`,
    );
}

/** Both networks exist afterwards, the internal one without egress; otherwise PROVIDER_UNAVAILABLE. */
export async function ensureNetworks(docker: Docker, settings: DockerSettings): Promise<void> {
  if (settings.network === settings.internalNetwork)
    throw providerUnavailable('DOCKER_NETWORK and DOCKER_INTERNAL_NETWORK must be different networks');
  await ensureNetwork(docker, settings.network, false);
  await ensureNetwork(docker, settings.internalNetwork, true);
}
