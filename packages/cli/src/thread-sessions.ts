import { SbxError, type SessionResponse } from '@sbx/protocol';
import {
  NotFoundError,
  RefreshingCredentials,
  clientError,
  DEFAULT_WORKSPACE_PATH,
  SandboxClient,
  workspacePathOf,
  type BrokerClient,
  type Credential,
  type NegotiateTarget,
  type RetryPolicy,
} from '@sbx/client';
import { CLI_RETRY } from './context.js';
import { renegotiatingClient } from './renegotiating-client.js';
import { brokerErrors, isGone, stalenessOf, type Staleness } from './staleness.js';
import { BINDING_ROLES, type BindingRole, type CachedThread, type CliStore } from './store.js';

/**
 * The thread's sandbox ended and none took its place (exit 4). Not an SDK NotFoundError:
 * code that takes those for "no such file" (a sync's listing) must not swallow it.
 */
export class SandboxGoneError extends SbxError {
  constructor(thread: string) {
    super('SANDBOX_NOT_FOUND', `the thread's sandbox is gone: run sbx ensure ${thread}`);
  }
}

/**
 * The CLI's bindings on a thread's sandbox. The broker grants by actor type: a human gets
 * `fs:rw shell`, an agent `fs:rw process` (docs/sessions.md). The CLI is a person's tool
 * that also runs commands for them, so it holds two bindings on one sandbox: `human`
 * (files, shells) and `agent` (exec, actor `<id>.cli`: the user's CLI acting as its agent).
 * The `observer` role (`sbx shell --observe`) is the human binding with tokens narrowed to
 * `shell:ro` at refresh, so the agent itself refuses its keystrokes.
 */
type NegotiatedRole = Exclude<BindingRole, 'observer'>;
const OBSERVER_CAPABILITIES = ['shell:ro'];

function targetOf(thread: string, role: NegotiatedRole, actorId: string, hint?: string): NegotiateTarget {
  const actors = {
    human: { type: 'human', id: actorId },
    agent: { type: 'agent', id: `${actorId}.cli` },
  } as const;
  return {
    scope: { type: 'thread', id: thread },
    actor: actors[role],
    ...(hint === undefined ? {} : { sandbox_hint: hint }),
  };
}

interface Opened {
  readonly client: SandboxClient;
  readonly credentials: RefreshingCredentials;
}

/** Whose client: the thread, the binding's role, how its calls (and a shell's reconnects) retry. */
interface Target {
  readonly thread: string;
  readonly role: BindingRole;
  readonly retry: RetryPolicy;
}

export class ThreadSessions {
  constructor(
    private readonly broker: BrokerClient,
    private readonly store: CliStore,
    private readonly actorId: string,
  ) {}

  /** Attaches or creates the thread's sandbox with the human and agent bindings. */
  async ensure(thread: string): Promise<CachedThread> {
    await this.#negotiate(thread, 'human', 'ensure');
    return this.#negotiate(thread, 'agent', 'ensure');
  }

  /**
   * A dataplane client for one role, from the cache when it holds the binding. A call that
   * fails because the cached binding is stale renegotiates once and runs again (see
   * `Staleness` and `renegotiatingClient`); a second stale failure is the answer.
   */
  async sandbox(
    thread: string,
    role: BindingRole,
    options: { readonly retry?: RetryPolicy } = {},
  ): Promise<SandboxClient> {
    const target: Target = { thread, role, retry: options.retry ?? CLI_RETRY };
    const cached = await this.#withBinding(thread, role);
    let opened: Opened;
    try {
      opened = await this.#open(target, cached);
    } catch (err) {
      const staleness = stalenessOf(err);
      if (staleness === undefined) throw err;
      return this.#reopen(target, cached, staleness);
    }
    // Single-flight: calls failing together (a sync's parallel transfers) share one renegotiation.
    // A failed one is forgotten, so the next stale failure asks the broker again (a
    // `sync --watch` outlasting a network outage).
    let renegotiation: Promise<SandboxClient> | undefined;
    const renegotiate = async (staleness: Staleness): Promise<SandboxClient> => {
      try {
        return await this.#reopen(target, cached, staleness, opened.credentials);
      } catch (err) {
        renegotiation = undefined;
        throw err;
      }
    };
    return renegotiatingClient(opened.client, (err) => {
      const staleness = stalenessOf(err);
      if (staleness === undefined) return undefined;
      renegotiation ??= renegotiate(staleness);
      return renegotiation;
    });
  }

  /**
   * Where the thread's sandbox keeps its workspace for its processes, which is how the
   * agent's answers name paths (`/workspace/a.txt`): from the cache, else (a cache written
   * before the broker said) from the agent's `GET /v1/info`, remembered for next time.
   * An agent without that route is an older one, which confines at `/workspace`.
   */
  async workspacePath(thread: string, sandbox: SandboxClient): Promise<string> {
    const cached = this.store.readThreads()[thread];
    if (cached?.workspace_path !== undefined) return cached.workspace_path;
    let workspace: string;
    try {
      workspace = (await sandbox.info()).workspace_path;
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      workspace = DEFAULT_WORKSPACE_PATH;
    }
    this.store.updateThread(thread, (entry) =>
      entry?.sandbox_id === cached?.sandbox_id && entry !== undefined
        ? { ...entry, workspace_path: workspace }
        : entry,
    );
    return workspace;
  }

  /**
   * Releases this CLI's bindings on the thread; the last binding of a sandbox destroys it.
   * Idempotent: a thread without a sandbox (it ended, or was released) has nothing to
   * release (an empty list), which is no error.
   */
  async release(thread: string): Promise<string[]> {
    let entry = this.store.readThreads()[thread];
    if (entry === undefined) {
      // Not cached (another machine, a cleared cache): join to learn our bindings, then leave.
      try {
        await this.#negotiate(thread, 'human', 'get');
        entry = await this.#negotiate(thread, 'agent', 'get');
      } catch (err) {
        if (err instanceof NotFoundError) return [];
        throw err;
      }
    }
    const released: string[] = [];
    for (const role of BINDING_ROLES) {
      const binding = entry.bindings[role];
      // The observer holds the human's binding: release each binding once.
      if (binding === undefined || released.includes(binding.session_id)) continue;
      await this.broker.release(binding.session_id).catch((err: unknown) => {
        if (!isGone(err)) throw err;
      });
      released.push(binding.session_id);
    }
    this.store.updateThread(thread, () => undefined);
    return released;
  }

  async #withBinding(thread: string, role: BindingRole): Promise<CachedThread> {
    const entry = this.store.readThreads()[thread];
    if (entry?.bindings[role] !== undefined) return entry;
    return this.#negotiate(thread, role, 'get');
  }

  /** A client on the entry's binding, its token refreshed first when due (which asks the broker). */
  async #open({ thread, role, retry }: Target, entry: CachedThread): Promise<Opened> {
    const binding = entry.bindings[role];
    if (binding === undefined) throw new Error(`no ${role} binding cached for ${thread}`);
    const credentials = new RefreshingCredentials({
      initial: { token: binding.token, expiresAt: new Date(binding.expires_at) },
      refresh: async (): Promise<Credential> => {
        const narrowed = role === 'observer' ? { capabilities: OBSERVER_CAPABILITIES } : {};
        const answer = await this.broker.refresh(binding.session_id, narrowed).catch((err: unknown) => {
          if (typeof err === 'object' && err !== null) brokerErrors.add(err);
          throw err;
        });
        const renewed = { ...binding, token: answer.token, expires_at: answer.expires_at };
        // Unless a renegotiation replaced the binding meanwhile.
        this.store.updateThread(thread, (old) =>
          old?.bindings[role]?.session_id === binding.session_id
            ? { ...old, bindings: { ...old.bindings, [role]: renewed } }
            : old,
        );
        return { token: answer.token, expiresAt: new Date(answer.expires_at) };
      },
    });
    try {
      await credentials.fresh();
    } catch (err) {
      credentials.close();
      throw err;
    }
    const client = new SandboxClient({
      httpBaseUrl: entry.http_base_url,
      wsBaseUrl: entry.ws_base_url,
      tokens: credentials,
      retry,
    });
    return { client, credentials };
  }

  /**
   * Drops what is known bad (a refused token's binding, else the entry), then joins the
   * thread's sandbox again. Never creates one: `get` resumes a suspended sandbox and binds
   * anew, but a thread whose sandbox ended has none until `sbx ensure` (a sync or read
   * against a new, empty sandbox would mirror emptiness over the user's files).
   */
  async #reopen(
    target: Target,
    stale: CachedThread,
    staleness: Staleness,
    staleCredentials?: RefreshingCredentials,
  ): Promise<SandboxClient> {
    staleCredentials?.close();
    const { thread, role } = target;
    this.store.updateThread(thread, (entry) => {
      if (entry?.sandbox_id !== stale.sandbox_id) return entry; // another sbx renegotiated meanwhile
      if (staleness !== 'rejected') return undefined;
      const { [role]: _dropped, ...others } = entry.bindings;
      return { ...entry, bindings: others };
    });
    const hint = staleness === 'gone' ? undefined : stale.sandbox_id;
    let renewed: CachedThread;
    try {
      renewed = await this.#negotiate(thread, role, 'get', hint);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      throw new SandboxGoneError(thread);
    }
    return (await this.#open(target, renewed)).client;
  }

  async #negotiate(
    thread: string,
    role: BindingRole,
    mode: 'ensure' | 'get',
    hint = this.store.readThreads()[thread]?.sandbox_id,
  ): Promise<CachedThread> {
    if (role === 'observer') return this.#observe(thread, mode, hint);
    const target = targetOf(thread, role, this.actorId, hint);
    let answer: SessionResponse;
    try {
      answer = mode === 'ensure' ? await this.broker.ensure(target) : await this.broker.get(target);
    } catch (err) {
      if (mode === 'get' && err instanceof NotFoundError) {
        this.store.updateThread(thread, () => undefined);
        // The broker's code and class (SESSION_NOT_FOUND stays that), with advice for a human.
        throw clientError(err.code, `no sandbox for thread ${thread}: run sbx ensure ${thread} first`);
      }
      throw err;
    }
    let saved: CachedThread | undefined;
    this.store.updateThread(thread, (old) => {
      // Bindings cached for another sandbox (one that ended) are no longer any use.
      const kept = old?.sandbox_id === answer.sandbox.id ? old.bindings : {};
      saved = {
        sandbox_id: answer.sandbox.id,
        http_base_url: answer.dataplane.http_base_url,
        ws_base_url: answer.dataplane.ws_base_url,
        workspace_path: workspacePathOf(answer),
        bindings: {
          ...kept,
          [role]: { session_id: answer.session_id, token: answer.token, expires_at: answer.expires_at },
        },
      };
      return saved;
    });
    if (saved === undefined) throw new Error('thread cache update did not run');
    return saved;
  }

  /** The human binding (negotiated when not cached) with a `shell:ro` token of its own. */
  async #observe(thread: string, mode: 'ensure' | 'get', hint?: string): Promise<CachedThread> {
    const cached = this.store.readThreads()[thread];
    const entry =
      cached?.bindings.human === undefined ? await this.#negotiate(thread, 'human', mode, hint) : cached;
    const human = entry.bindings.human;
    if (human === undefined) throw new Error(`no human binding cached for ${thread}`);
    const answer = await this.broker.refresh(human.session_id, { capabilities: OBSERVER_CAPABILITIES });
    const observer = { session_id: human.session_id, token: answer.token, expires_at: answer.expires_at };
    this.store.updateThread(thread, (old) =>
      old?.sandbox_id === entry.sandbox_id ? { ...old, bindings: { ...old.bindings, observer } } : old,
    );
    return { ...entry, bindings: { ...entry.bindings, observer } };
  }
}
