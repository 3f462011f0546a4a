// The state behind the fake Docker engine: containers (each agent container backed by a real HTTP
// server, see fake-agent.ts, which reads its key only as the image's agent could), volumes
// holding the files put into them, networks.
import type http from 'node:http';
import path from 'node:path';
import type Docker from 'dockerode';
import type { TarEntry } from '../../../src/providers/docker/tar-archive.js';
import { startFakeAgent, stopFakeAgent, type AgentBehaviour } from './fake-agent.js';

export interface FakeContainer {
  readonly id: string;
  readonly name: string;
  readonly body: Docker.ContainerCreateOptions;
  status: 'created' | 'running' | 'exited' | 'dead';
  exitCode: number;
  oomKilled: boolean;
  /** Its IP on its network (a loopback address of its own, so "container" addressing really connects). */
  readonly ip: string;
  hostPort: number | undefined;
  agent: http.Server | undefined;
}

export interface FakeVolume {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly files: Map<string, TarEntry>;
}

export class EngineFault extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function envOf(container: FakeContainer, name: string): string | undefined {
  return container.body.Env?.find((e) => e.startsWith(`${name}=`))?.slice(name.length + 1);
}

/** The image's agent: its real ids `sbx-agent`, 1001:1001, no other group (D22). */
const AGENT_ID = 1001;

/**
 * The image's entrypoint (setpriv … --ruid 1001 --euid 1000 …) needs root with CAP_SETUID and
 * CAP_SETGID; without them it fails at once and the container exits 1, as on a real engine.
 */
function splitsIdentity(container: FakeContainer): boolean {
  const caps = container.body.HostConfig?.CapAdd ?? [];
  return container.body.User === '0:0' && caps.includes('SETUID') && caps.includes('SETGID');
}

/** Whether the agent, reading its own files with its real ids, may read this one. */
function agentMayRead(file: TarEntry): boolean {
  if (file.uid === AGENT_ID) return (file.mode & 0o400) !== 0;
  if (file.gid === AGENT_ID) return (file.mode & 0o040) !== 0;
  return (file.mode & 0o004) !== 0;
}

export class FakeContainers {
  readonly byId = new Map<string, FakeContainer>();
  readonly volumes = new Map<string, FakeVolume>();
  readonly networks = new Map<string, { Id: string; Name: string; Internal: boolean }>();
  agentBehaviour: AgentBehaviour = 'healthy';
  #nextId = 1;

  find(idOrName: string): FakeContainer {
    const container =
      this.byId.get(idOrName) ?? [...this.byId.values()].find((c) => c.name === idOrName.replace(/^\//, ''));
    if (container === undefined) throw new EngineFault(404, `No such container: ${idOrName}`);
    return container;
  }

  create(name: string, body: Docker.ContainerCreateOptions): FakeContainer {
    if ([...this.byId.values()].some((c) => c.name === name))
      throw new EngineFault(409, `name ${name} in use`);
    if (body.Image?.startsWith('missing') === true)
      throw new EngineFault(404, `No such image: ${body.Image}`);
    const n = this.#nextId++;
    const id = `${n.toString(16).padStart(4, '0')}${'f'.repeat(60)}`;
    for (const mount of body.HostConfig?.Mounts ?? [])
      if (mount.Type === 'volume' && !this.volumes.has(mount.Source))
        this.volumes.set(mount.Source, {
          name: mount.Source,
          labels: mount.VolumeOptions?.Labels ?? {},
          files: new Map(),
        });
    const container: FakeContainer = {
      id,
      name,
      body,
      status: 'created',
      exitCode: 0,
      oomKilled: false,
      ip: `127.0.${Math.floor(n / 250)}.${(n % 250) + 2}`,
      hostPort: undefined,
      agent: undefined,
    };
    this.byId.set(id, container);
    return container;
  }

  /** The volume mounted exactly at `dir`; a path on the read-only root is refused as the engine does. */
  volumeAt(container: FakeContainer, dir: string): FakeVolume {
    const mount = container.body.HostConfig?.Mounts?.find((m) => m.Target === dir);
    const volume = mount === undefined ? undefined : this.volumes.get(mount.Source);
    if (volume !== undefined) return volume;
    if (container.body.HostConfig?.ReadonlyRootfs === true)
      throw new EngineFault(400, 'container rootfs is marked read-only');
    throw new EngineFault(404, `Could not find the file ${dir} in container ${container.name}`);
  }

  fileOf(container: FakeContainer, file: string): TarEntry | undefined {
    return this.volumeAt(container, path.dirname(file)).files.get(path.basename(file));
  }

  async start(container: FakeContainer): Promise<void> {
    if (container.status === 'running') throw new EngineFault(304, 'already started');
    const joined = container.body.HostConfig?.NetworkMode?.match(/^container:(.+)$/)?.[1];
    if (joined !== undefined && this.find(joined).status !== 'running')
      throw new EngineFault(409, 'cannot join the network of a non running container');
    container.status = 'running';
    container.exitCode = 0;
    if (container.body.Labels?.['sbx.dev/role'] !== 'agent') return;
    if (this.agentBehaviour === 'exits' || !splitsIdentity(container)) {
      container.status = 'exited';
      container.exitCode = 1;
      return;
    }
    const published = container.body.HostConfig?.PortBindings !== undefined;
    const { server, port } = await startFakeAgent({
      sandboxId: envOf(container, 'SANDBOX_ID') ?? '',
      issuer: envOf(container, 'SANDBOX_TOKEN_ISSUER') ?? '',
      readKey: () => {
        const file = this.fileOf(container, envOf(container, 'SANDBOX_SIGNING_KEY_FILE') ?? '');
        return file !== undefined && agentMayRead(file) ? file.content.toString() : undefined;
      },
      host: published ? '127.0.0.1' : container.ip,
      port: published ? 0 : Number(envOf(container, 'PORT')),
      behaviour: this.agentBehaviour,
    });
    container.agent = server;
    container.hostPort = published ? port : undefined;
  }

  async stop(container: FakeContainer, exitCode = 143): Promise<void> {
    if (container.status !== 'running') throw new EngineFault(304, 'already stopped');
    container.status = 'exited';
    container.exitCode = exitCode;
    container.hostPort = undefined;
    if (container.agent !== undefined) await stopFakeAgent(container.agent);
    container.agent = undefined;
  }

  async remove(container: FakeContainer, force: boolean): Promise<void> {
    if (container.status === 'running' && !force) throw new EngineFault(409, 'container is running');
    if (container.status === 'running') await this.stop(container);
    this.byId.delete(container.id);
  }

  removeVolume(name: string): void {
    if (!this.volumes.has(name)) throw new EngineFault(404, `no such volume: ${name}`);
    const users = [...this.byId.values()].filter((c) =>
      c.body.HostConfig?.Mounts?.some((m) => m.Source === name),
    );
    if (users.length > 0) throw new EngineFault(409, `volume ${name} is in use`);
    this.volumes.delete(name);
  }

  inspect(container: FakeContainer): unknown {
    const { status } = container;
    const port = Object.keys(container.body.ExposedPorts ?? {})[0] ?? '8080/tcp';
    const network = container.body.HostConfig?.NetworkMode ?? 'default';
    return {
      Id: container.id,
      Name: `/${container.name}`,
      State: {
        Status: status,
        Running: status === 'running',
        Dead: status === 'dead',
        OOMKilled: container.oomKilled,
        ExitCode: container.exitCode,
        Paused: false,
        Restarting: false,
      },
      Config: {
        Env: container.body.Env ?? [],
        Labels: container.body.Labels ?? {},
        Image: container.body.Image,
        User: container.body.User,
      },
      HostConfig: container.body.HostConfig ?? {},
      NetworkSettings: {
        Ports:
          container.hostPort === undefined
            ? {}
            : { [port]: [{ HostIp: '127.0.0.1', HostPort: String(container.hostPort) }] },
        Networks:
          status === 'running' && !network.startsWith('container:')
            ? { [network]: { IPAddress: container.ip } }
            : {},
      },
    };
  }

  async closeAll(): Promise<void> {
    await Promise.all(
      [...this.byId.values()].map(async (c) => (c.agent === undefined ? undefined : stopFakeAgent(c.agent))),
    );
  }
}
