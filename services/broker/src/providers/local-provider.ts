import { SbxError } from '@sbx/protocol';
import type { SigningKey } from '@sbx/tokens';
import { readinessBearer, spawnSandboxAgent, workspacePathOf } from './agent-launch.js';
import { inspectAgent } from './agent-inspection.js';
import { keptSandboxRecord } from './kept-workspace.js';
import type { AgentExit } from './agent-process.js';
import type { LiveAgent } from './live-agent.js';
import { beforeDeadline, dataplaneOf, isHealthy, waitUntilHealthy } from './agent-readiness.js';
import type { LocalIsolation } from './isolation.js';
import {
  assertNetworkPolicy,
  resolveLocalSettings,
  type LocalProviderOptions,
  type LocalSettings,
} from './local-settings.js';
import { sweepSandbox } from './process-sweep.js';
import { AgentRestarts } from './agent-restarts.js';
import { clearEnded, markEnded, wasEnded } from './ended-mark.js';
import { removeUploadLeftovers } from './upload-leftovers.js';
import {
  assertSandboxId,
  providerUnavailable,
  sandboxExists,
  sandboxNotFound,
  type Dataplane,
  type ProviderSandboxStatus,
  type Revocation,
  type SandboxProvider,
  type SandboxSpec,
  type WarmClaim,
} from './provider.js';
import {
  readSandboxRecord,
  sandboxFilesExist,
  sandboxIdsIn,
  sandboxPaths,
  shareStateWith,
  type SandboxPaths,
  type SandboxRecord,
} from './sandbox-layout.js';
import { DEFAULT_SANDBOX_LIMITS } from './sandbox-limits.js';
import { admitWorkspace, prepareSandbox, removeSandbox } from './sandbox-preparation.js';
import { SandboxKeys } from './sandbox-keys.js';
import { SerialQueue } from './serial-queue.js';
import { StartGate } from './start-gate.js';
import { DiskBudget } from './disk-budget.js';

export type { LocalProviderOptions } from './local-settings.js';

/**
 * One agent process per sandbox on this host (docs/security.md, docs/architecture.md D21). The
 * agent runs as the sandbox's own host user (a root broker gives each sandbox one), with no
 * capability, in the sandbox's own filesystem view; its user processes run in the sandbox's
 * bubblewrap namespaces, within the sandbox's limits.
 */
export class LocalProvider implements SandboxProvider {
  readonly name = 'local';
  readonly isolation: LocalIsolation;
  readonly #settings: LocalSettings;
  readonly #agents = new Map<string, LiveAgent>();
  /** Sandboxes whose agent failed to start, or crashed until given up on, since their last good start. */
  readonly #failed = new Set<string>();
  readonly #queue = new SerialQueue();
  readonly #starts: StartGate;
  /** Crashed agents are started again on their workspace (agent-restarts.ts). */
  readonly #restarts: AgentRestarts;
  /** Workspace images promise their size: never more than the disk holds (disk-budget.ts). */
  readonly #disk: DiskBudget | undefined;
  /** Revocations, key rotations and claims (sandbox-keys.ts). */
  readonly #keys: SandboxKeys;
  #closing: Promise<void> | undefined;

  private constructor(settings: LocalSettings) {
    this.#settings = settings;
    this.#starts = new StartGate(settings.concurrentStarts);
    this.isolation = settings.isolation;
    this.#disk =
      settings.volumes === undefined ? undefined : new DiskBudget(settings.dataDir, settings.diskReserve);
    this.#keys = new SandboxKeys(settings.dataDir, this.#agents);
    this.#restarts = new AgentRestarts({
      settings,
      queue: this.#queue,
      restart: (sandboxId, port) => this.#startKept(sandboxId, { port }),
      endedElsewhere: (sandboxId) => wasEnded(sandboxPaths(this.#settings.dataDir, sandboxId)),
      closing: () => this.#closing !== undefined,
      markFailed: (sandboxId) => this.#failed.add(sandboxId),
    });
    process.on('exit', this.#killAllNow);
  }

  /** Probes isolation and prepares the agent; throws PROVIDER_UNAVAILABLE when either is impossible. */
  static async open(options: LocalProviderOptions): Promise<LocalProvider> {
    const settings = await resolveLocalSettings(options);
    const { isolation, dataDir } = settings;
    settings.logger.info({ isolation, data_dir: dataDir }, 'local sandbox provider ready');
    return new LocalProvider(settings);
  }

  async create(spec: SandboxSpec): Promise<{ providerRef: string; dataplane: Dataplane }> {
    assertSandboxId(spec.sandboxId);
    this.#assertOpen();
    const paths = sandboxPaths(this.#settings.dataDir, spec.sandboxId);
    const base: SandboxRecord = {
      sandboxId: spec.sandboxId,
      tenantId: spec.tenantId,
      tokenIssuer: spec.tokenIssuer,
      network: spec.network,
      ...(spec.environment === undefined ? {} : { environment: { ...spec.environment } }),
      limits: spec.limits ?? DEFAULT_SANDBOX_LIMITS,
    };
    return this.#queue.run(spec.sandboxId, async () => {
      if (this.#agents.has(spec.sandboxId) || (await sandboxFilesExist(paths)))
        throw sandboxExists(spec.sandboxId);
      assertNetworkPolicy(this.#settings, base.network);
      // Refused before anything is made; held until the image exists (no two promise the same bytes).
      const admission = await admitWorkspace(this.#disk, base);
      try {
        const record = await prepareSandbox(this.#settings, this.#queue, base, paths, spec.signingKey);
        admission?.release();
        const dataplane = await this.#starts.run(() => this.#launch(record, paths));
        return { providerRef: `local:${spec.sandboxId}`, dataplane };
      } catch (err) {
        admission?.release();
        // A sandbox that never came up leaves nothing behind.
        await removeSandbox(this.#settings, paths);
        this.#failed.delete(spec.sandboxId);
        throw err instanceof SbxError
          ? err
          : providerUnavailable(`sandbox ${spec.sandboxId} could not be prepared`, err);
      }
    });
  }

  async start(sandboxId: string): Promise<Dataplane> {
    assertSandboxId(sandboxId);
    this.#assertOpen();
    return this.#queue.run(sandboxId, () => {
      // Asked for now: a crashed agent waiting for its restart is started at once.
      this.#restarts.cancel(sandboxId);
      return this.#startKept(sandboxId);
    });
  }

  async stop(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, async () => {
      const paths = sandboxPaths(this.#settings.dataDir, sandboxId);
      if (!this.#agents.has(sandboxId) && !(await sandboxFilesExist(paths))) throw sandboxNotFound(sandboxId);
      this.#restarts.cancel(sandboxId);
      await markEnded(paths);
      await this.#end(sandboxId, paths);
    });
  }

  async destroy(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, async () => {
      const paths = sandboxPaths(this.#settings.dataDir, sandboxId);
      this.#restarts.forget(sandboxId);
      await markEnded(paths);
      await this.#end(sandboxId, paths);
      await removeSandbox(this.#settings, paths);
    });
  }

  async status(sandboxId: string): Promise<ProviderSandboxStatus> {
    assertSandboxId(sandboxId);
    const live = this.#agents.get(sandboxId);
    if (live !== undefined) {
      if (live.dataplane === undefined || live.bearer === undefined) return 'starting';
      const healthy = await isHealthy(live.dataplane.httpBaseUrl, sandboxId, 1000, live.bearer);
      return healthy ? 'running' : 'failed';
    }
    if (this.#restarts.pending(sandboxId)) return 'starting';
    if (this.#failed.has(sandboxId)) return 'failed';
    return (await sandboxFilesExist(sandboxPaths(this.#settings.dataDir, sandboxId))) ? 'stopped' : 'missing';
  }

  async list(): Promise<readonly string[]> {
    return [...new Set([...this.#agents.keys(), ...(await sandboxIdsIn(this.#settings.dataDir))])].toSorted();
  }

  inspect(sandboxId: string) {
    return inspectAgent(sandboxId, this.#agents.get(sandboxId));
  }

  /** The pid of the sandbox's agent process while it runs (operators, crash tests). */
  agentPid(sandboxId: string): number | undefined {
    return this.#agents.get(sandboxId)?.agent.agentPid;
  }

  readonly revoke = (sandboxId: string, revocation: Revocation) => this.#keys.revoke(sandboxId, revocation);
  readonly claim = (sandboxId: string, claim: WarmClaim) => this.#keys.claim(sandboxId, claim);
  readonly rotateKey = (sandboxId: string, key: SigningKey) => this.#keys.rotateKey(sandboxId, key);

  close(): Promise<void> {
    this.#closing ??= (async () => {
      const live = [...this.#agents.entries()];
      // A crashed agent waiting for its restart has its workspace mounted too: ended as well.
      const waiting = this.#restarts.cancelAll().filter((id) => !this.#agents.has(id));
      await Promise.all([
        ...live.map(([id, agent]) => this.#end(id, agent.paths)),
        ...waiting.map((id) =>
          this.#queue.run(id, () => this.#end(id, sandboxPaths(this.#settings.dataDir, id))),
        ),
      ]);
      // Operations already under way finish (a launch notices the close and ends its agent).
      await this.#queue.settled();
      process.off('exit', this.#killAllNow);
    })();
    return this.#closing;
  }

  /** Synchronous last resort when the broker exits without `close()`. */
  readonly #killAllNow = (): void => {
    for (const live of this.#agents.values()) live.agent.signalGroup('SIGTERM');
  };

  #assertOpen(): void {
    if (this.#closing !== undefined) throw providerUnavailable('the local provider is shut down');
  }

  /** Starts a stopped (or crashed) sandbox's agent on its kept workspace; in its queue turn. */
  async #startKept(sandboxId: string, restart?: { readonly port: number | undefined }): Promise<Dataplane> {
    const live = this.#agents.get(sandboxId);
    if (live?.dataplane !== undefined) return live.dataplane;
    const paths = sandboxPaths(this.#settings.dataDir, sandboxId);
    const record = await keptSandboxRecord(paths, sandboxId, this.#settings.volumes !== undefined);
    assertNetworkPolicy(this.#settings, record.network);
    if (record.volume === true) (await admitWorkspace(this.#disk, record))?.release();
    await this.#settings.volumes?.mount(paths.volumeFile, paths.workspace);
    // Made by a broker that did not run as root: its files are the broker's user's, so is the sandbox.
    const runAs = this.#settings.sandboxUsers ? record : { ...record, hostUid: undefined };
    if (restart !== undefined)
      await removeUploadLeftovers(paths.workspace, runAs.hostUid, this.#settings.logger, sandboxId);
    else await clearEnded(paths);
    return this.#starts.run(() => this.#launch(runAs, paths, restart?.port));
  }

  async #launch(record: SandboxRecord, paths: SandboxPaths, port?: number): Promise<Dataplane> {
    const sandboxId = record.sandboxId;
    await shareStateWith(paths, record.hostUid);
    const agent = await spawnSandboxAgent(this.#settings, this.isolation, record, paths, port);
    const live: LiveAgent = {
      agent,
      paths,
      record,
      bearer: undefined,
      dataplane: undefined,
      expectedExit: false,
    };
    this.#agents.set(sandboxId, live);
    this.#failed.delete(sandboxId);
    void agent.exited.then((exit) => this.#agentEnded(sandboxId, live, exit));
    const deadline = Date.now() + this.#settings.startTimeoutMs;
    try {
      const url = await beforeDeadline(agent.listening, deadline, 'agent start');
      // Read only now: a key the agent refused is reported by the agent's own last words.
      live.bearer = await readinessBearer(paths, record);
      await waitUntilHealthy(
        url,
        sandboxId,
        deadline,
        () => !agent.alive || this.#closing !== undefined,
        live.bearer,
      );
      if (this.#closing !== undefined) throw new Error('the provider shut down while the agent started');
      live.dataplane = dataplaneOf(url, await workspacePathOf(this.isolation, paths));
      return live.dataplane;
    } catch (err) {
      await this.#end(sandboxId, paths);
      this.#failed.add(sandboxId);
      throw providerUnavailable(
        `sandbox ${sandboxId} did not start`,
        new Error(agent.describeFailure(), { cause: err }),
      );
    }
  }

  /** Ends the sandbox's agent (if any) and every process still working in its workspace. */
  async #end(sandboxId: string, paths: SandboxPaths): Promise<void> {
    const live = this.#agents.get(sandboxId);
    if (live !== undefined) {
      live.expectedExit = true;
      await live.agent.terminate(this.#settings.stopGraceMs);
      if (this.#agents.get(sandboxId) === live) this.#agents.delete(sandboxId);
    }
    this.#failed.delete(sandboxId);
    const record = live?.record ?? (await readSandboxRecord(paths).catch(() => undefined));
    await sweepSandbox(sandboxId, paths.workspace, record?.hostUid, this.#settings.cgroups);
    await this.#settings.volumes?.unmount(paths.workspace);
  }

  #agentEnded(sandboxId: string, live: LiveAgent, exit: AgentExit): void {
    if (this.#agents.get(sandboxId) === live) this.#agents.delete(sandboxId);
    // Ends the provider asked for, and failed starts (reported by the start itself), are no crash.
    if (live.expectedExit || live.dataplane === undefined) return;
    void this.#restarts.crashed(sandboxId, live, exit);
  }
}
