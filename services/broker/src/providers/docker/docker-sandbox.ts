// One sandbox's things on the engine: its container, its sidecar when the client has one, and
// their volumes; made, started, stopped and removed together.
import type Docker from 'dockerode';
import { sandboxExists, type SandboxSpec } from '../provider.js';
import { sandboxContainerSpec, sidecarContainerSpec } from './container-spec.js';
import {
  engine,
  engineError,
  inspectOrUndefined,
  isConflict,
  removeContainer,
  removeVolume,
  startContainer,
  stopContainer,
} from './docker-engine.js';
import { sandboxNames, type SandboxNames } from './docker-names.js';
import type { DockerSettings } from './docker-settings.js';
import { keyFile, putRunFiles, putSidecarFiles, sandboxEnvFile, sidecarTokenFile } from './key-delivery.js';

export class SandboxContainers {
  readonly names: SandboxNames;
  readonly main: Docker.Container;
  readonly sidecar: Docker.Container;
  readonly #docker: Docker;
  readonly #sandboxId: string;

  constructor(docker: Docker, sandboxId: string) {
    this.#docker = docker;
    this.#sandboxId = sandboxId;
    this.names = sandboxNames(sandboxId);
    this.main = docker.getContainer(this.names.container);
    this.sidecar = docker.getContainer(this.names.sidecar);
  }

  inspect(): Promise<Docker.ContainerInspectInfo | undefined> {
    return inspectOrUndefined(this.main, `inspect the container of sandbox ${this.#sandboxId}`);
  }

  /** Created, not started: the key and environment are in place before the agent first looks. */
  async create(spec: SandboxSpec, settings: DockerSettings): Promise<void> {
    const id = this.#sandboxId;
    // Volumes a failed destroy left under these names must not become this sandbox's workspace.
    // In use, or the name taken, means another broker is making this sandbox right now.
    const main = await this.#removeVolumes()
      .then(() => this.#docker.createContainer(sandboxContainerSpec(spec, settings)))
      .catch((err: unknown) => {
        throw isConflict(err) ? sandboxExists(id) : engineError(`create the container of sandbox ${id}`, err);
      });
    await putRunFiles(
      main,
      [keyFile(spec.signingKey), sandboxEnvFile(spec.environment)],
      `deliver the key of sandbox ${id}`,
    );
    if (spec.sidecar === undefined) return;
    const { sidecar } = spec;
    const created = await engine(`create the sidecar of sandbox ${id}`, () =>
      this.#docker.createContainer(sidecarContainerSpec(spec, sidecar, main.id, settings)),
    );
    await putSidecarFiles(
      created,
      [sidecarTokenFile(sidecar.token)],
      `deliver the sidecar token of sandbox ${id}`,
    );
  }

  /** The sandbox container first: the sidecar joins its network namespace. */
  async start(): Promise<void> {
    await startContainer(this.main, `start the container of sandbox ${this.#sandboxId}`);
    if (
      (await inspectOrUndefined(this.sidecar, `inspect the sidecar of sandbox ${this.#sandboxId}`)) !==
      undefined
    )
      await startContainer(this.sidecar, `start the sidecar of sandbox ${this.#sandboxId}`);
  }

  async stop(graceSeconds: number): Promise<void> {
    await stopContainer(this.main, graceSeconds, `stop the container of sandbox ${this.#sandboxId}`);
    await stopContainer(this.sidecar, graceSeconds, `stop the sidecar of sandbox ${this.#sandboxId}`);
  }

  /** Containers and volumes, whichever of them exist. */
  async remove(): Promise<void> {
    await removeContainer(this.sidecar, `remove the sidecar of sandbox ${this.#sandboxId}`);
    await removeContainer(this.main, `remove the container of sandbox ${this.#sandboxId}`);
    await engine(`remove the volumes of sandbox ${this.#sandboxId}`, () => this.#removeVolumes());
  }

  async #removeVolumes(): Promise<void> {
    const { workspaceVolume, runVolume, sidecarVolume } = this.names;
    for (const name of [workspaceVolume, runVolume, sidecarVolume])
      await removeVolume(this.#docker.getVolume(name));
  }
}
