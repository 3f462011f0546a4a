import type { SessionResponse } from '@sbx/protocol';
import {
  NotFoundError,
  RefreshingCredentials,
  SandboxClient,
  SessionExpiredError,
  TransportError,
  UnauthenticatedError,
  type BrokerClient,
  type Credential,
  type NegotiateTarget,
  type RetryPolicy,
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

/** 404 SESSION_NOT_FOUND / BINDING_NOT_FOUND or 410 SESSION_EXPIRED from the broker's session routes. */
const isGone = (err: unknown): boolean => err instanceof NotFoundError || err instanceof SessionExpiredError;

/**
 * Why a cached binding stopped working, read from the failure it caused (docs/sessions.md,
 * "CLI cache and renegotiation"):
 * - `gone`: the broker's refresh answered 404 (unknown binding) or 410 (released, or its
 *   sandbox ended). That sandbox is not coming back: ensure without it as the hint.
 * - `rejected`: the agent refused the token (401, WebSocket close 1008, 4401 expired):
 *   tampered, expired, or for another sandbox. Ensure with the cached id as the hint.
 * - `unreachable`: connection refused, unknown or unreachable host: the request never
 *   arrived, so running it again is safe. The hint lets the broker resume a suspended one.
 * Anything else is an answer: a 403 (a real refusal), a missing file, a timeout or reset
 * (the request may have run), the broker's own 401.
 */
export type Staleness = 'gone' | 'rejected' | 'unreachable';

/** Errors of the broker's refresh route: a broker 401 is a bad login, not a stale token. */
const brokerErrors = new WeakSet<object>();

const NEVER_ARRIVED: readonly string[] = ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH'];

/** Whether a transport failure happened before the request reached anyone (its causes say). */
function neverArrived(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  if ('code' in err && typeof err.code === 'string' && NEVER_ARRIVED.includes(err.code)) return true;
  if (err instanceof AggregateError && err.errors.length > 0) {
    return err.errors.every((each) => neverArrived(each, depth + 1));
  }
  return 'cause' in err && neverArrived(err.cause, depth + 1);
}

function stalenessOf(err: unknown): Staleness | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  if (brokerErrors.has(err)) return isGone(err) ? 'gone' : undefined;
  if (err instanceof UnauthenticatedError || err instanceof SessionExpiredError) return 'rejected';
  if (err instanceof TransportError && neverArrived(err.cause)) return 'unreachable';
  return undefined;
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
    let renegotiation: Promise<SandboxClient> | undefined;
    return renegotiatingClient(opened.client, (err) => {
      const staleness = stalenessOf(err);
      if (staleness === undefined) return undefined;
      renegotiation ??= this.#reopen(target, cached, staleness, opened.credentials);
      return renegotiation;
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

  /** A client on the entry's binding, its token refreshed first when due (which asks the broker). */
  async #open({ thread, role, retry }: Target, entry: CachedThread): Promise<Opened> {
    const binding = entry.bindings[role];
    if (binding === undefined) throw new Error(`no ${role} binding cached for ${thread}`);
    const credentials = new RefreshingCredentials({
      initial: { token: binding.token, expiresAt: new Date(binding.expires_at) },
      refresh: async (): Promise<Credential> => {
        const answer = await this.broker.refresh(binding.session_id).catch((err: unknown) => {
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

  /** Drops what is known bad (a refused token's binding, else the entry), then ensures again. */
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
    const renewed = await this.#negotiate(thread, role, 'ensure', hint);
    return (await this.#open(target, renewed)).client;
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
}

/** The renegotiated client for a stale failure, or undefined when the failure is an answer. */
type Renegotiate = (err: unknown) => Promise<SandboxClient> | undefined;

/**
 * The SandboxClient the commands get: a method of the client, its `files` or its `exec`
 * runs on the current client and, when its promise fails because the binding is stale,
 * once more on the renegotiated one. A Proxy, so every command (and SDK method) is covered
 * without knowing. Never run again: a call given a stream (its body is spent), one that
 * returns no promise (a handle such as a watch), a call on the renegotiated client.
 */
function renegotiatingClient(first: SandboxClient, renegotiate: Renegotiate): SandboxClient {
  let current = first;
  const facade = <T extends object>(pick: (client: SandboxClient) => T, nested: object = {}): T =>
    new Proxy(pick(first), {
      get(_target, name) {
        if (Object.hasOwn(nested, name)) return Reflect.get(nested, name);
        const value: unknown = Reflect.get(pick(current), name);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]): unknown => {
          const callOn = (client: SandboxClient): unknown => {
            const api = pick(client);
            const method: unknown = Reflect.get(api, name);
            if (typeof method !== 'function') throw new TypeError(`${String(name)} is not a method`);
            return Reflect.apply(method, api, args);
          };
          const ranOn = current;
          const result = callOn(ranOn);
          if (!(result instanceof Promise) || ranOn !== first) return result;
          if (args.some((arg) => arg instanceof ReadableStream)) return result;
          return result.catch(async (err: unknown) => {
            const next = renegotiate(err);
            if (next === undefined) throw err;
            current = await next;
            return callOn(current);
          });
        };
      },
    });
  const files = facade((client) => client.files);
  const exec = facade((client) => client.exec);
  return facade((client) => client, { files, exec });
}
