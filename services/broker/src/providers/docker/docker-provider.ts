import Docker from 'dockerode';
import { SbxError } from '@sbx/protocol';
import type { SigningKey } from '@sbx/tokens';
import { inspectAgent, type InspectableAgent } from '../agent-inspection.js';
import { dataplaneOf, isHealthy, readinessToken } from '../agent-readiness.js';
import {
  assertSandboxId,
  providerUnavailable,
  sandboxExists,
  sandboxNotFound,
  type AgentReport,
  type Dataplane,
  type ProviderSandboxStatus,
  type Revocation,
  type SandboxProvider,
  type SandboxSpec,
} from '../provider.js';
import { SerialQueue } from '../serial-queue.js';
import { waitForAgent } from './agent-wait.js';
import { engine } from './docker-engine.js';
import { LABELS, MANAGED_BY, REVOCATIONS_FILE_NAME, WORKSPACE_DIR } from './docker-names.js';
import { ensureNetworks } from './docker-networks.js';
import { SandboxContainers } from './docker-sandbox.js';
import {
  assertReachable,
  resolveDockerSettings,
  type DockerProviderOptions,
  type DockerSettings,
} from './docker-settings.js';
import { agentUrlOf, containerStatus, describeExit, envValueOf } from './docker-state.js';
import { keyFile, mergedRevocations, putRunFiles, readRunFile } from './key-delivery.js';
import { recoverProbeAccess, type ProbeAccess } from './probe-access.js';

export type { DockerProviderOptions } from './docker-settings.js';

/**
 * One hardened container per sandbox (plus the client's sidecar) on a Docker engine
 * (docs/provider-docker.md). The engine is the record: a broker that restarts finds its
 * sandboxes by label and name, and reads a sandbox's key back from its key volume to probe it.
 */
export class DockerProvider implements SandboxProvider {
  readonly name = 'docker';
  readonly isolation = 'container' as const;
  readonly #docker: Docker;
  readonly #settings: DockerSettings;
  readonly #queue = new SerialQueue();
  /** Revocations have their own queue: they must not wait behind a slow start. */
  readonly #revocations = new SerialQueue();
  readonly #access = new Map<string, ProbeAccess>();
  /** Sandboxes this broker started (and has not stopped since): `close()` stops them. */
  readonly #started = new Set<string>();
  readonly #starting = new Set<string>();
  #closing: Promise<void> | undefined;

  private constructor(docker: Docker, settings: DockerSettings) {
    this.#docker = docker;
    this.#settings = settings;
  }

  /** Checks the engine answers and the networks exist (made when missing); PROVIDER_UNAVAILABLE otherwise. */
  static async open(options: DockerProviderOptions): Promise<DockerProvider> {
    const settings = resolveDockerSettings(options);
    const docker = new Docker(settings.connection);
    await engine('answer a ping', () => docker.ping());
    await ensureNetworks(docker, settings);
    settings.logger.info(
      {
        image: settings.image,
        network: settings.network,
        internal_network: settings.internalNetwork,
        agent_address: settings.agentAddress,
      },
      'docker sandbox provider ready',
    );
    return new DockerProvider(docker, settings);
  }

  async create(spec: SandboxSpec): Promise<{ providerRef: string; dataplane: Dataplane }> {
    assertSandboxId(spec.sandboxId);
    this.#assertOpen();
    const id = spec.sandboxId;
    return this.#queue.run(id, async () => {
      const containers = new SandboxContainers(this.#docker, id);
      if ((await containers.inspect()) !== undefined) throw sandboxExists(id);
      assertReachable(this.#settings, spec.network);
      this.#starting.add(id);
      try {
        await containers.create(spec, this.#settings);
        this.#access.set(id, { key: spec.signingKey, issuer: spec.tokenIssuer });
        return {
          providerRef: `docker:${containers.names.container}`,
          dataplane: await this.#run(id, containers),
        };
      } catch (err) {
        this.#access.delete(id);
        // Another broker's sandbox of that id is not this one's to remove.
        if (err instanceof SbxError && err.code === 'CONFLICT') throw err;
        // A sandbox that never came up leaves nothing behind.
        await containers
          .remove()
          .catch((cleanup: unknown) =>
            this.#settings.logger.warn(
              { sandbox_id: id, err: cleanup },
              'could not remove a sandbox that did not start',
            ),
          );
        throw err instanceof SbxError ? err : providerUnavailable(`sandbox ${id} could not be created`, err);
      } finally {
        this.#starting.delete(id);
      }
    });
  }

  async start(sandboxId: string): Promise<Dataplane> {
    assertSandboxId(sandboxId);
    this.#assertOpen();
    return this.#queue.run(sandboxId, async () => {
      const containers = new SandboxContainers(this.#docker, sandboxId);
      const info = await containers.inspect();
      if (info === undefined) throw sandboxNotFound(sandboxId);
      const running = await this.#healthyAgent(sandboxId, containers, info);
      if (running !== undefined) {
        this.#started.add(sandboxId);
        return running.dataplane;
      }
      this.#starting.add(sandboxId);
      try {
        // Running but not answering: a fresh start, not a second agent next to a stuck one.
        if (info.State.Running) await containers.stop(this.#settings.stopGraceSeconds);
        return await this.#run(sandboxId, containers);
      } finally {
        this.#starting.delete(sandboxId);
      }
    });
  }

  async stop(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, async () => {
      const containers = new SandboxContainers(this.#docker, sandboxId);
      if ((await containers.inspect()) === undefined) throw sandboxNotFound(sandboxId);
      await containers.stop(this.#settings.stopGraceSeconds);
      this.#started.delete(sandboxId);
    });
  }

  async destroy(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, async () => {
      await new SandboxContainers(this.#docker, sandboxId).remove();
      this.#started.delete(sandboxId);
      this.#access.delete(sandboxId);
    });
  }

  async status(sandboxId: string): Promise<ProviderSandboxStatus> {
    assertSandboxId(sandboxId);
    if (this.#starting.has(sandboxId)) return 'starting';
    const containers = new SandboxContainers(this.#docker, sandboxId);
    const info = await containers.inspect();
    const status = containerStatus(info?.State);
    if (status !== 'running' || info === undefined) return status;
    return (await this.#healthyAgent(sandboxId, containers, info)) === undefined ? 'failed' : 'running';
  }

  /** Sandbox containers, stopped ones included, and volumes a container no longer holds (destroy removes them). */
  async list(): Promise<readonly string[]> {
    const managed = `${LABELS.managedBy}=${MANAGED_BY}`;
    const [containers, volumes] = await Promise.all([
      engine('list sandbox containers', () =>
        this.#docker.listContainers({ all: true, filters: { label: [managed, `${LABELS.role}=agent`] } }),
      ),
      engine('list sandbox volumes', () => this.#docker.listVolumes({ filters: { label: [managed] } })),
    ]);
    const ids = [...containers, ...volumes.Volumes].flatMap((thing) => thing.Labels[LABELS.sandboxId] ?? []);
    return [...new Set(ids)].toSorted();
  }

  async inspect(sandboxId: string): Promise<AgentReport | undefined> {
    assertSandboxId(sandboxId);
    const containers = new SandboxContainers(this.#docker, sandboxId);
    const live = await containers
      .inspect()
      .then((info) =>
        info?.State.Running === true ? this.#reachable(sandboxId, containers, info) : undefined,
      )
      .catch(() => undefined);
    return inspectAgent(sandboxId, live);
  }

  /** Merges into `revocations.json` in the key volume; the agent sees it within its poll (250 ms). */
  async revoke(sandboxId: string, revocation: Revocation): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#revocations.run(sandboxId, async () => {
      const containers = new SandboxContainers(this.#docker, sandboxId);
      if ((await containers.inspect()) === undefined) throw sandboxNotFound(sandboxId);
      const what = `write the revocation list of sandbox ${sandboxId}`;
      const current = await readRunFile(containers.main, REVOCATIONS_FILE_NAME, what);
      const merged = await mergedRevocations(current, revocation).catch((err: unknown) => {
        throw providerUnavailable(`the revocation list of sandbox ${sandboxId} could not be merged`, err);
      });
      await putRunFiles(containers.main, [merged], what);
    });
  }

  /** Replaces `agent.key` in the key volume; the agent reads it on its next check or on `revoke({notBefore})`. */
  async rotateKey(sandboxId: string, key: SigningKey): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#revocations.run(sandboxId, async () => {
      const containers = new SandboxContainers(this.#docker, sandboxId);
      const info = await containers.inspect();
      if (info === undefined) throw sandboxNotFound(sandboxId);
      await putRunFiles(containers.main, [keyFile(key)], `replace the key of sandbox ${sandboxId}`);
      const issuer = this.#access.get(sandboxId)?.issuer ?? envValueOf(info, 'SANDBOX_TOKEN_ISSUER');
      if (issuer !== undefined) this.#access.set(sandboxId, { key, issuer });
    });
  }

  /** Refuses new work, lets what runs finish, then stops the sandboxes this broker started. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#queue.settled();
      const started = [...this.#started];
      this.#started.clear();
      await Promise.all(
        started.map((id) =>
          new SandboxContainers(this.#docker, id)
            .stop(this.#settings.stopGraceSeconds)
            .catch((err: unknown) =>
              this.#settings.logger.warn({ sandbox_id: id, err }, 'could not stop a sandbox at shutdown'),
            ),
        ),
      );
    })();
    return this.#closing;
  }

  #assertOpen(): void {
    if (this.#closing !== undefined) throw providerUnavailable('the docker provider is shut down');
  }

  /** Starts the containers and waits for the agent; a start that fails leaves them stopped. */
  async #run(sandboxId: string, containers: SandboxContainers): Promise<Dataplane> {
    const access = await this.#probeAccess(sandboxId, containers, undefined);
    const bearer = () => readinessToken(access.key, sandboxId, access.issuer);
    try {
      await containers.start();
      const url = await waitForAgent(
        containers.main,
        sandboxId,
        this.#settings,
        bearer,
        () => this.#closing !== undefined,
      );
      this.#started.add(sandboxId);
      return dataplaneOf(url, WORKSPACE_DIR);
    } catch (err) {
      const info = await containers.inspect().catch(() => undefined);
      await containers.stop(this.#settings.stopGraceSeconds).catch(() => undefined);
      const reason = err instanceof SbxError ? err.message : describeExit(info?.State);
      throw providerUnavailable(`sandbox ${sandboxId} did not start: ${reason}`, err);
    }
  }

  /** The running agent's dataplane and probe, when it answers its health check now. */
  async #healthyAgent(sandboxId: string, containers: SandboxContainers, info: Docker.ContainerInspectInfo) {
    if (!info.State.Running) return undefined;
    const live = await this.#reachable(sandboxId, containers, info).catch(() => undefined);
    if (live === undefined) return undefined;
    return (await isHealthy(live.dataplane.httpBaseUrl, sandboxId, 1000, live.bearer)) ? live : undefined;
  }

  async #reachable(sandboxId: string, containers: SandboxContainers, info: Docker.ContainerInspectInfo) {
    const url = agentUrlOf(info, this.#settings);
    if (url === undefined) return undefined;
    const access = await this.#probeAccess(sandboxId, containers, info);
    const live = {
      dataplane: dataplaneOf(url, WORKSPACE_DIR),
      bearer: () => readinessToken(access.key, sandboxId, access.issuer),
    };
    return live satisfies InspectableAgent;
  }

  /** Known since this broker made or rotated it, else read back from the key volume (a restarted broker). */
  async #probeAccess(
    sandboxId: string,
    containers: SandboxContainers,
    known: Docker.ContainerInspectInfo | undefined,
  ): Promise<ProbeAccess> {
    const cached = this.#access.get(sandboxId);
    if (cached !== undefined) return cached;
    const access = await recoverProbeAccess(sandboxId, containers, known ?? (await containers.inspect()));
    this.#access.set(sandboxId, access);
    return access;
  }
}
