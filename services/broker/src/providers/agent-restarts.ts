// A crashed agent is restarted on the same workspace, as a container runtime restarts a
// container (docs/lifecycle.md, "Agent crashes"): at once after its first crash, then after a
// doubling delay, on the port it listened at when that port is free (clients and the broker's
// row keep their address). `maxCrashes` crashes within `windowMs` are a crash loop: the agent
// stays down, its processes are swept and its workspace unmounted but kept, and the broker is
// told so (it fails the sandbox). A restart that fails counts as one more crash.
import { createServer } from 'node:net';
import { SbxError } from '@sbx/protocol';
import type { AgentExit } from './agent-process.js';
import type { LiveAgent } from './live-agent.js';
import type { LocalSettings } from './local-settings.js';
import { sweepCrashed, sweepSandbox } from './process-sweep.js';
import type { AgentCrashReport, Dataplane } from './provider.js';
import type { SerialQueue } from './serial-queue.js';

export interface RestartPolicy {
  /** Crashes within `windowMs` after which the agent is not started again (default 5). */
  readonly maxCrashes: number;
  /** Default 10 min: a crash older than this is forgotten. */
  readonly windowMs: number;
  /** The wait before the second restart (the first is at once), doubling after (default 1 s). */
  readonly backoffMs: number;
  /** The longest wait between two restarts (default 30 s). */
  readonly maxBackoffMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = Object.freeze({
  maxCrashes: 5,
  windowMs: 600_000,
  backoffMs: 1000,
  maxBackoffMs: 30_000,
});

type Settings = Pick<LocalSettings, 'cgroups' | 'volumes' | 'logger' | 'onAgentExit' | 'restartPolicy'>;

export interface RestartHooks {
  readonly settings: Settings;
  readonly queue: SerialQueue;
  /** Starts the sandbox's agent on its kept workspace (in its queue turn), on `port` when free. */
  readonly restart: (sandboxId: string, port: number | undefined) => Promise<Dataplane>;
  readonly closing: () => boolean;
  /** Stopped or destroyed through another broker sharing the data dir (ended-mark.ts): not a crash. */
  readonly endedElsewhere: (sandboxId: string) => Promise<boolean>;
  /** The agent stays down: the provider's status answers `failed` from now on. */
  readonly markFailed: (sandboxId: string) => void;
  /** Milliseconds since the epoch, for the crash window (default Date.now). */
  readonly now?: () => number;
}

/** The crash that started a run of restarts, and the agent it killed. */
interface Crash {
  readonly exit: AgentExit;
  readonly live: Pick<LiveAgent, 'paths' | 'record'>;
  readonly port: number | undefined;
}

export class AgentRestarts {
  readonly #crashes = new Map<string, number[]>();
  /** Restarts waiting for their delay or their queue turn; `cancel` takes them back. */
  readonly #pending = new Map<string, { timer: NodeJS.Timeout | undefined }>();

  constructor(private readonly hooks: RestartHooks) {}

  /**
   * An agent that served ended unasked: restart it, or give up on a crash loop. Resolves once
   * it is decided: a restart pending (or given up on), or none wanted.
   */
  async crashed(sandboxId: string, live: LiveAgent, exit: AgentExit): Promise<void> {
    const { logger } = this.hooks.settings;
    const ended = await this.hooks.endedElsewhere(sandboxId).catch((err: unknown) => {
      logger.warn({ sandbox_id: sandboxId, err }, 'could not tell whether another broker ended it');
      return false;
    });
    if (!ended) return this.#crashed(sandboxId, live, exit);
    this.forget(sandboxId);
    logger.info({ sandbox_id: sandboxId }, 'sandbox agent ended by another broker: not restarted');
  }

  #crashed(sandboxId: string, live: LiveAgent, exit: AgentExit): void {
    const port = live.dataplane === undefined ? undefined : Number(new URL(live.dataplane.httpBaseUrl).port);
    const { logger } = this.hooks.settings;
    logger.warn({ sandbox_id: sandboxId, code: exit.code, signal: exit.signal }, 'sandbox agent exited');
    // Queued first: whatever the dead agent left is gone before anything starts again.
    sweepCrashed(this.hooks.queue, this.hooks.settings, sandboxId, live);
    // Shutting down: nothing starts again (close() unmounts; the next broker resumes it).
    if (!this.hooks.closing()) this.#next(sandboxId, { exit, live, port }, undefined);
  }

  /** A restart is waiting or under way: the sandbox is `starting`. */
  pending(sandboxId: string): boolean {
    return this.#pending.has(sandboxId);
  }

  /** Stop, destroy, an explicit start or shutdown: a waiting restart does not happen. */
  cancel(sandboxId: string): void {
    clearTimeout(this.#pending.get(sandboxId)?.timer);
    this.#pending.delete(sandboxId);
  }

  /** Destroyed: its crashes are forgotten too. */
  forget(sandboxId: string): void {
    this.cancel(sandboxId);
    this.#crashes.delete(sandboxId);
  }

  /** Shutdown: every waiting restart is cancelled; returns their sandboxes. */
  cancelAll(): string[] {
    const ids = [...this.#pending.keys()];
    for (const id of ids) this.cancel(id);
    return ids;
  }

  /** Counts one crash (or failed restart) and restarts after the backoff, or gives up. */
  #next(sandboxId: string, crash: Crash, restartError: unknown): void {
    const policy = this.hooks.settings.restartPolicy;
    const now = (this.hooks.now ?? Date.now)();
    const recent = (this.#crashes.get(sandboxId) ?? []).filter((at) => at > now - policy.windowMs);
    recent.push(now);
    this.#crashes.set(sandboxId, recent);
    const crashes = recent.length;
    // A workspace that is gone will not come back by trying again.
    const lost = restartError instanceof SbxError && restartError.code === 'SANDBOX_NOT_FOUND';
    if (crashes >= policy.maxCrashes || lost) {
      this.#giveUp(sandboxId, crash, crashes, restartError);
      return;
    }
    const delayMs = crashes === 1 ? 0 : Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** (crashes - 2));
    this.#report(sandboxId, crash, { kind: 'restarting', crashes, delayMs });
    const entry: { timer: NodeJS.Timeout | undefined } = { timer: undefined };
    this.cancel(sandboxId);
    this.#pending.set(sandboxId, entry);
    const current = () => this.#pending.get(sandboxId) === entry && !this.hooks.closing();
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      void this.hooks.queue
        .run(sandboxId, async () => {
          if (!current()) return;
          if (await this.hooks.endedElsewhere(sandboxId).catch(() => false)) return this.forget(sandboxId);
          try {
            const port = crash.port !== undefined && (await portIsFree(crash.port)) ? crash.port : undefined;
            const dataplane = await this.hooks.restart(sandboxId, port);
            if (this.#pending.get(sandboxId) === entry) this.#pending.delete(sandboxId);
            this.hooks.settings.logger.info({ sandbox_id: sandboxId, crashes }, 'sandbox agent restarted');
            this.#report(sandboxId, crash, { kind: 'restarted', crashes, dataplane });
          } catch (err) {
            // Cancelled meanwhile (stop, destroy, shutdown): nothing more to do.
            if (!current()) return;
            this.#pending.delete(sandboxId);
            this.hooks.settings.logger.warn({ sandbox_id: sandboxId, err }, 'sandbox agent did not restart');
            this.#next(sandboxId, crash, err);
          }
        })
        .finally(() => {
          if (this.#pending.get(sandboxId) === entry) this.#pending.delete(sandboxId);
        });
    }, delayMs);
    entry.timer.unref();
  }

  #giveUp(sandboxId: string, crash: Crash, crashes: number, restartError: unknown): void {
    const { settings, queue } = this.hooks;
    this.cancel(sandboxId);
    this.hooks.markFailed(sandboxId);
    settings.logger.error(
      { sandbox_id: sandboxId, crashes, window_ms: settings.restartPolicy.windowMs, err: restartError },
      restartError === undefined
        ? 'sandbox agent keeps crashing: not restarted again, its workspace is kept'
        : 'sandbox agent could not be restarted: its workspace is kept',
    );
    // Nothing runs on the workspace any more: its volume is not left mounted.
    queue
      .run(sandboxId, async () => {
        await sweepSandbox(
          sandboxId,
          crash.live.paths.workspace,
          crash.live.record.hostUid,
          settings.cgroups,
        );
        await settings.volumes?.unmount(crash.live.paths.workspace);
      })
      .catch((err: unknown) =>
        settings.logger.warn({ sandbox_id: sandboxId, err }, 'could not sweep a crash-looping sandbox'),
      );
    const error = restartError === undefined ? undefined : SbxError.from(restartError).message;
    this.#report(sandboxId, crash, {
      kind: 'gave_up',
      crashes,
      windowMs: settings.restartPolicy.windowMs,
      ...(error === undefined ? {} : { error }),
    });
  }

  #report(sandboxId: string, crash: Crash, report: AgentCrashReport): void {
    this.hooks.settings.onAgentExit?.(sandboxId, crash.exit.code, crash.exit.signal, report);
  }
}

/** Whether the agent could listen at `port` on loopback now (another process may have taken it). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(true)));
  });
}
