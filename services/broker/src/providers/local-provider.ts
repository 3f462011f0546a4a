import { SbxError } from '@sbx/protocol';
import type { SigningKey } from '@sbx/tokens';
import { readinessBearer, spawnSandboxAgent, workspacePathOf } from './agent-launch.js';
import { inspectAgent } from './agent-inspection.js';
import { keptSandboxRecord } from './kept-workspace.js';
import type { AgentExit } from './agent-process.js';
import type { LiveAgent } from './live-agent.js';
import {
  beforeDeadline,
  dataplaneOf,
  isHealthy,
  readinessToken,
  waitUntilHealthy,
} from './agent-readiness.js';
import type { LocalIsolation } from './isolation.js';
import {
  assertNetworkPolicy,
  resolveLocalSettings,
  type LocalProviderOptions,
  type LocalSettings,
} from './local-settings.js';
import { sweepCrashed, sweepSandbox } from './process-sweep.js';
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
  existingSandboxPaths,
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
import { addRevocations, replaceFile, replaceKeyFile } from './revocation-file.js';
import { SerialQueue } from './serial-queue.js';
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
  /** Sandboxes whose agent crashed (or failed to start) since their last good start. */
  readonly #failed = new Set<string>();
  readonly #queue = new SerialQueue();
  /** Workspace images promise their size: never more than the disk holds (disk-budget.ts). */
  readonly #disk: DiskBudget | undefined;
  /** Revocations have their own queue: they must not wait behind a slow start. */
  readonly #revocations = new SerialQueue();
  #closing: Promise<void> | undefined;

  private constructor(settings: LocalSettings) {
    this.#settings = settings;
    this.isolation = settings.isolation;
    this.#disk =
      settings.volumes === undefined ? undefined : new DiskBudget(settings.dataDir, settings.diskReserve);
    process.on('exit', this.#killAllNow);
  }

  /** Probes isolation and prepares the agent; throws PROVIDER_UNAVAILABLE when either is impossible. */
  static async open(options: LocalProviderOptions): Promise<LocalProvider> {
    const settings = await resolveLocalSettings(options);
    settings.logger.info(
      { isolation: settings.isolation, data_dir: settings.dataDir },
      'local sandbox provider ready',
    );
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
        return { providerRef: `local:${spec.sandboxId}`, dataplane: await this.#launch(record, paths) };
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
    return this.#queue.run(sandboxId, async () => {
      const live = this.#agents.get(sandboxId);
      if (live?.dataplane !== undefined) return live.dataplane;
      const paths = sandboxPaths(this.#settings.dataDir, sandboxId);
      const record = await keptSandboxRecord(paths, sandboxId, this.#settings.volumes !== undefined);
      assertNetworkPolicy(this.#settings, record.network);
      if (record.volume === true) (await admitWorkspace(this.#disk, record))?.release();
      await this.#settings.volumes?.mount(paths.volumeFile, paths.workspace);
      // Made by a broker that did not run as root: its files are the broker's user's, so is the sandbox.
      return this.#launch(this.#settings.sandboxUsers ? record : { ...record, hostUid: undefined }, paths);
    });
  }

  async stop(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, async () => {
      const paths = sandboxPaths(this.#settings.dataDir, sandboxId);
      if (!this.#agents.has(sandboxId) && !(await sandboxFilesExist(paths))) throw sandboxNotFound(sandboxId);
      await this.#end(sandboxId, paths);
    });
  }

  async destroy(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#queue.run(sandboxId, async () => {
      const paths = sandboxPaths(this.#settings.dataDir, sandboxId);
      await this.#end(sandboxId, paths);
      await removeSandbox(this.#settings, paths);
    });
  }

  async status(sandboxId: string): Promise<ProviderSandboxStatus> {
    assertSandboxId(sandboxId);
    const live = this.#agents.get(sandboxId);
    if (live !== undefined) {
      if (live.dataplane === undefined || live.bearer === undefined) return 'starting';
      return (await isHealthy(live.dataplane.httpBaseUrl, sandboxId, 1000, live.bearer))
        ? 'running'
        : 'failed';
    }
    if (this.#failed.has(sandboxId)) return 'failed';
    return (await sandboxFilesExist(sandboxPaths(this.#settings.dataDir, sandboxId))) ? 'stopped' : 'missing';
  }

  async list(): Promise<readonly string[]> {
    return [...new Set([...this.#agents.keys(), ...(await sandboxIdsIn(this.#settings.dataDir))])].toSorted();
  }

  inspect(sandboxId: string) {
    return inspectAgent(sandboxId, this.#agents.get(sandboxId));
  }

  /** Merges into `revocations.json` next to the key file, which the agent watches. */
  async revoke(sandboxId: string, revocation: Revocation): Promise<void> {
    assertSandboxId(sandboxId);
    const paths = await existingSandboxPaths(this.#settings.dataDir, sandboxId);
    await this.#revocations
      .run(sandboxId, () => addRevocations(paths.stateDir, revocation, Date.now()))
      .catch((err: unknown) => {
        throw providerUnavailable(`the revocation list of sandbox ${sandboxId} could not be written`, err);
      });
  }

  /** Replaces `agent.key`; the agent reads it now when `revoke({notBefore})` follows, else within its check. */
  async claim(sandboxId: string, claim: WarmClaim): Promise<void> {
    // A warm sandbox's variables file was made holding none: nothing to write for a caller
    // without a client policy (the common claim, and a burst of them queues on file I/O).
    if (Object.keys(claim.environment).length === 0) return;
    const paths = await existingSandboxPaths(this.#settings.dataDir, sandboxId);
    await replaceFile(paths.envFile, JSON.stringify(claim.environment));
  }

  async rotateKey(sandboxId: string, key: SigningKey): Promise<void> {
    assertSandboxId(sandboxId);
    const paths = await existingSandboxPaths(this.#settings.dataDir, sandboxId);
    await this.#revocations.run(sandboxId, async () => {
      await replaceKeyFile(paths.keyFile, key).catch((err: unknown) => {
        throw providerUnavailable(`the key of sandbox ${sandboxId} could not be replaced`, err);
      });
      const live = this.#agents.get(sandboxId);
      const record = live?.record;
      if (live !== undefined && record !== undefined)
        live.bearer = () => readinessToken(key, sandboxId, record.tokenIssuer);
    });
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      const live = [...this.#agents.entries()];
      await Promise.all(live.map(([id, agent]) => this.#end(id, agent.paths)));
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

  async #launch(record: SandboxRecord, paths: SandboxPaths): Promise<Dataplane> {
    const sandboxId = record.sandboxId;
    await shareStateWith(paths, record.hostUid);
    const agent = await spawnSandboxAgent(this.#settings, this.isolation, record, paths);
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
    this.#failed.add(sandboxId);
    this.#settings.logger.warn(
      { sandbox_id: sandboxId, code: exit.code, signal: exit.signal },
      'sandbox agent exited',
    );
    sweepCrashed(this.#queue, this.#settings, sandboxId, live);
    this.#settings.onAgentExit?.(sandboxId, exit.code, exit.signal);
  }
}
