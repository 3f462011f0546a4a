import { BrokerSession, type BrokerClient, type SandboxClient } from '@sbx/client';
import type { MvpSessionResponse } from '@sbx/protocol';
import { SbxSandboxError } from './errors.js';
import { LeaseKeeper } from './lease.js';
import { adoptSession } from './adopt.js';

/** One thread's sandbox as the backend uses it. */
export interface ThreadSandbox {
  readonly threadId: string;
  /** The broker session (binding) behind it. */
  readonly sessionId: string;
  readonly sandboxId: string;
  /** Where the sandbox's processes see the workspace (`/workspace` under bubblewrap). */
  readonly workspacePath: string;
  readonly client: SandboxClient;
  /** Before a use: `false` when the sandbox's binding is gone and the thread needs a new one. */
  beforeUse(): Promise<boolean>;
  /** A use failed with `err` (a lost sandbox is checked with the broker before the next use). */
  noteFailure(err: unknown): void;
  /** Releases what this backend negotiated (a pre-negotiated session is left to its owner). */
  release(): Promise<void>;
}

export interface SessionPoolOptions {
  /** Made on first use: a backend fed only pre-negotiated sessions never needs a broker. */
  readonly broker: () => BrokerClient;
  readonly actorId: string;
  readonly heartbeatIntervalMs?: number;
  /** Runs once on every sandbox the pool opens (seeding initial files); a failure closes it. */
  readonly onOpen?: (sandbox: ThreadSandbox) => Promise<void>;
}

/**
 * The sessions of one backend, one per thread (or per pre-negotiated session), opened once
 * and shared by concurrent calls: a promise is cached, not a result, so ten tool calls of a
 * new thread make one `ensure`. A failed open is forgotten, so the next call tries again.
 * Tokens refresh themselves before expiry (`RefreshingCredentials`).
 */
export class SessionPool {
  readonly #open = new Map<string, Promise<ThreadSandbox>>();

  constructor(private readonly options: SessionPoolOptions) {}

  /** The thread's sandbox as actor `agent`: `ensure` creates it when missing, `get` only attaches. */
  async forThread(threadId: string, mode: 'ensure' | 'get' = 'ensure'): Promise<ThreadSandbox> {
    const key = `thread:${threadId}`;
    const cached = this.#cached(key, () => this.#negotiate(threadId, mode));
    const sandbox = await cached;
    if (await sandbox.beforeUse()) return sandbox;
    // Its binding is gone (released elsewhere, expired, destroyed): negotiate again, once.
    if (this.#open.get(key) === cached) this.#open.delete(key);
    await sandbox.release().catch(() => undefined);
    return this.#cached(key, () => this.#negotiate(threadId, mode));
  }

  /** A session negotiated before the run (`configurable.sandbox`): used as is, no `ensure`. */
  forSession(session: MvpSessionResponse): Promise<ThreadSandbox> {
    return this.#cached(`session:${session.session_id}`, async () =>
      adoptSession(session, this.options.broker),
    );
  }

  /** The sandboxes opened so far (settled ones only). */
  async opened(): Promise<ThreadSandbox[]> {
    const settled = await Promise.allSettled(this.#open.values());
    return settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  }

  async closeAll(): Promise<void> {
    const all = await this.opened();
    this.#open.clear();
    await Promise.all(all.map((s) => s.release().catch(() => undefined)));
  }

  #cached(key: string, open: () => Promise<ThreadSandbox>): Promise<ThreadSandbox> {
    const existing = this.#open.get(key);
    if (existing !== undefined) return existing;
    const opening = open().then(async (sandbox) => {
      try {
        await this.options.onOpen?.(sandbox);
        return sandbox;
      } catch (err) {
        await sandbox.release().catch(() => undefined);
        throw err;
      }
    });
    this.#open.set(key, opening);
    opening.catch(() => this.#open.delete(key));
    return opening;
  }

  async #negotiate(threadId: string, mode: 'ensure' | 'get'): Promise<ThreadSandbox> {
    const target = {
      scope: { type: 'thread', id: threadId },
      actor: { type: 'agent', id: this.options.actorId },
    } as const;
    const options =
      this.options.heartbeatIntervalMs === undefined
        ? {}
        : { heartbeatIntervalMs: this.options.heartbeatIntervalMs };
    let session: BrokerSession;
    try {
      const broker = this.options.broker();
      session =
        mode === 'ensure'
          ? await BrokerSession.ensure(broker, target, options)
          : await BrokerSession.get(broker, target, options);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new SbxSandboxError(`no sandbox for thread ${threadId}: ${reason}`, 'SANDBOX_UNAVAILABLE', err);
    }
    const lease = new LeaseKeeper(session, (session.response.policy.idle_timeout_seconds * 1000) / 2);
    return {
      threadId,
      sessionId: session.sessionId,
      sandboxId: session.response.sandbox.id,
      get workspacePath() {
        return session.workspacePath;
      },
      client: session.sandbox(),
      beforeUse: () => lease.beforeUse(),
      noteFailure: (err) => lease.noteFailure(err),
      release: () => session.release(),
    };
  }
}
