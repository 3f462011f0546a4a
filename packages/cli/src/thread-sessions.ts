import type { SessionResponse } from '@sbx/protocol';
import {
  NotFoundError,
  RefreshingCredentials,
  SandboxClient,
  SessionExpiredError,
  type BrokerClient,
  type Credential,
  type NegotiateTarget,
} from '@sbx/client';
import { CLI_RETRY } from './context.js';
import { BINDING_ROLES, type BindingRole, type CachedThread, type CliStore } from './store.js';

/**
 * The CLI's bindings on a thread's sandbox. The broker grants by actor type: a human gets
 * `fs:rw shell`, an agent `fs:rw process` (docs/sessions.md). The CLI is a person's tool
 * that also runs commands for them, so it holds up to three bindings on one sandbox:
 * `human` (files, shells), `agent` (exec, actor `<id>.cli`: the user's CLI acting as its
 * agent) and `observer` (`shell:ro` only, for `sbx shell --observe`).
 */
interface RoleRequest {
  readonly actor: { readonly type: 'human' | 'agent'; readonly id: string };
  readonly requested_capabilities?: string[];
}

function targetOf(thread: string, role: BindingRole, actorId: string, hint?: string): NegotiateTarget {
  const roles: Record<BindingRole, RoleRequest> = {
    human: { actor: { type: 'human', id: actorId } },
    agent: { actor: { type: 'agent', id: `${actorId}.cli` } },
    observer: { actor: { type: 'human', id: `${actorId}.observer` }, requested_capabilities: ['shell:ro'] },
  };
  return {
    scope: { type: 'thread', id: thread },
    ...roles[role],
    ...(hint === undefined ? {} : { sandbox_hint: hint }),
  };
}

const isGone = (err: unknown): boolean => err instanceof NotFoundError || err instanceof SessionExpiredError;

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

  /** A dataplane client for one role, from the cache when its binding is still alive. */
  async sandbox(thread: string, role: BindingRole): Promise<SandboxClient> {
    const entry = await this.#withBinding(thread, role);
    const tokens = await this.#credentials(thread, role, entry);
    return new SandboxClient({
      httpBaseUrl: entry.http_base_url,
      wsBaseUrl: entry.ws_base_url,
      tokens,
      retry: CLI_RETRY,
    });
  }

  /** Releases this CLI's bindings on the thread; the last binding of a sandbox destroys it. */
  async release(thread: string): Promise<string[]> {
    let entry = this.store.readThreads()[thread];
    if (entry === undefined) {
      // Not cached (another machine, a cleared cache): join to learn our bindings, then leave.
      await this.#negotiate(thread, 'human', 'get');
      entry = await this.#negotiate(thread, 'agent', 'get');
    }
    const released: string[] = [];
    for (const role of BINDING_ROLES) {
      const binding = entry.bindings[role];
      if (binding === undefined) continue;
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

  /** The binding's token, refreshed when due; a binding the broker forgot is negotiated again. */
  async #credentials(thread: string, role: BindingRole, entry: CachedThread): Promise<RefreshingCredentials> {
    const binding = entry.bindings[role];
    if (binding === undefined) throw new Error(`no ${role} binding cached for ${thread}`);
    const credentials = new RefreshingCredentials({
      initial: { token: binding.token, expiresAt: new Date(binding.expires_at) },
      refresh: async (): Promise<Credential> => {
        const answer = await this.broker.refresh(binding.session_id);
        this.#saveToken(thread, role, binding.session_id, answer.token, answer.expires_at);
        return { token: answer.token, expiresAt: new Date(answer.expires_at) };
      },
    });
    try {
      await credentials.fresh();
      return credentials;
    } catch (err) {
      credentials.close();
      if (!isGone(err)) throw err;
      const renewed = await this.#negotiate(thread, role, 'get', entry.sandbox_id);
      return this.#credentials(thread, role, renewed);
    }
  }

  async #negotiate(
    thread: string,
    role: BindingRole,
    mode: 'ensure' | 'get',
    hint = this.store.readThreads()[thread]?.sandbox_id,
  ): Promise<CachedThread> {
    const target = targetOf(thread, role, this.actorId, hint);
    let answer: SessionResponse;
    try {
      answer = mode === 'ensure' ? await this.broker.ensure(target) : await this.broker.get(target);
    } catch (err) {
      if (mode === 'get' && err instanceof NotFoundError) {
        this.store.updateThread(thread, () => undefined);
        throw new NotFoundError(err.code, `no sandbox for thread ${thread}: run sbx ensure ${thread} first`);
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

  #saveToken(thread: string, role: BindingRole, sessionId: string, token: string, expiresAt: string): void {
    this.store.updateThread(thread, (old) =>
      old === undefined
        ? undefined
        : {
            ...old,
            bindings: { ...old.bindings, [role]: { session_id: sessionId, token, expires_at: expiresAt } },
          },
    );
  }
}
