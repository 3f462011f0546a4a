import type { BrokerClient, BrokerSession, RetryPolicy, SandboxClient } from '@sbx/client';
import { SbxError, type Actor } from '@sbx/protocol';

/**
 * The SDK (and the protocol's schemas it builds) is loaded by the first tool call, not at
 * start: an MCP client's `initialize` never waits for it (bench/cli-start).
 */
const sdk = (): Promise<typeof import('@sbx/client')> => import('@sbx/client');

/**
 * The caller's own credential (an API key or an OIDC access token), asked for at every
 * broker request so a refreshed login is picked up. Never a credential shared by callers.
 */
export type BearerProvider = () => string | Promise<string>;

export interface EnvironmentOptions {
  /** The broker's base URL. */
  readonly brokerUrl: string;
  readonly bearer: BearerProvider;
  /** Who works through the bindings; default `{ type: 'agent', id: 'mcp' }` (files and processes). */
  readonly actor?: Actor;
  /** Per broker call, retries included (default 30 s). */
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
}

export type AcquireMode = 'ensure' | 'get';

/** Errors after which a cached session is no use any more: the next call negotiates again. */
const STALE_CODES = new Set([
  'SESSION_NOT_FOUND',
  'BINDING_NOT_FOUND',
  'SESSION_EXPIRED',
  'UNAUTHENTICATED',
  'BACKEND_UNAVAILABLE',
]);

/**
 * One caller's environments (sessions), by thread. Each caller gets its own instance, built
 * on its own bearer, so sessions and their capability tokens are never shared between
 * callers. Tokens are refreshed before they expire (BrokerSession); leases are extended only
 * by `heartbeat` (the `environment_heartbeat` tool).
 */
export class CallerEnvironments {
  readonly #options: EnvironmentOptions;
  #broker: Promise<BrokerClient> | undefined;
  readonly #actor: Actor;
  readonly #sessions = new Map<string, Promise<BrokerSession>>();
  #latest: string | undefined;

  constructor(options: EnvironmentOptions) {
    this.#options = options;
    this.#actor = options.actor ?? { type: 'agent', id: 'mcp' };
  }

  #client(): Promise<BrokerClient> {
    const options = this.#options;
    this.#broker ??= sdk().then(
      ({ BrokerClient }) =>
        new BrokerClient({
          baseUrl: options.brokerUrl,
          bearer: options.bearer,
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
          ...(options.retry === undefined ? {} : { retry: options.retry }),
        }),
    );
    return this.#broker;
  }

  /** Negotiates the thread's session (`ensure` attaches or creates, `get` only attaches). */
  async acquire(thread: string, mode: AcquireMode, capabilities?: readonly string[]): Promise<BrokerSession> {
    const target = {
      scope: { type: 'thread', id: thread } as const,
      actor: this.#actor,
      ...(capabilities === undefined ? {} : { requested_capabilities: [...capabilities] }),
    };
    const previous = this.#sessions.get(thread);
    // Set before any await, so calls at once share one negotiation.
    const next = Promise.all([sdk(), this.#client()]).then(([{ BrokerSession }, broker]) =>
      mode === 'ensure' ? BrokerSession.ensure(broker, target) : BrokerSession.get(broker, target),
    );
    this.#sessions.set(thread, next);
    try {
      const session = await next;
      this.#latest = thread;
      const old = await previous?.catch(() => undefined);
      if (old !== undefined && old !== session) old.credentials.close();
      return session;
    } catch (err) {
      // A failed renegotiation leaves the session there was (if any) in use.
      if (this.#sessions.get(thread) === next) {
        if (previous === undefined) this.#sessions.delete(thread);
        else this.#sessions.set(thread, previous);
      }
      throw err;
    }
  }

  /** The thread named, or the one acquired last; a thread not yet acquired is attached to (`get`). */
  async session(thread: string | undefined): Promise<BrokerSession> {
    const name = thread ?? this.#latest;
    if (name === undefined) {
      throw new SbxError('BAD_REQUEST', 'no environment: call environment_acquire first or pass thread_id');
    }
    // Looked up before any await, so calls at once share one negotiation.
    const cached = this.#sessions.get(name);
    if (cached === undefined) return this.acquire(name, 'get');
    return (await cached.catch(() => undefined)) ?? this.acquire(name, 'get');
  }

  /** Runs `use` on the thread's sandbox; a failure that makes the session stale forgets it. */
  withSandbox<T>(
    thread: string | undefined,
    use: (sandbox: SandboxClient, session: BrokerSession) => Promise<T>,
  ): Promise<T> {
    return this.withSession(thread, (session) => use(session.sandbox(), session));
  }

  /** Runs `use` on the thread's session; a failure that makes the session stale forgets it. */
  async withSession<T>(thread: string | undefined, use: (session: BrokerSession) => Promise<T>): Promise<T> {
    const session = await this.session(thread);
    try {
      return await use(session);
    } catch (err) {
      if (err instanceof SbxError && STALE_CODES.has(err.code)) this.#forget(session);
      throw err;
    }
  }

  /** Releases the thread's binding (the last binding of a sandbox ends it). */
  async release(thread: string | undefined): Promise<BrokerSession> {
    const session = await this.session(thread);
    this.#forget(session);
    if (this.#latest === session.response.binding.scope.id) this.#latest = undefined;
    await session.release();
    return session;
  }

  /** Stops token timers without releasing anything (the leases run out on their own). */
  close(): void {
    for (const pending of this.#sessions.values()) {
      pending.then((s) => s.credentials.close()).catch(() => undefined);
    }
    this.#sessions.clear();
  }

  #forget(session: BrokerSession): void {
    const thread = session.response.binding.scope.id;
    const cached = this.#sessions.get(thread);
    if (cached !== undefined) void this.#drop(thread, cached, session);
  }

  /** Drops the cached entry if it still holds `session` (a renegotiation may have replaced it). */
  async #drop(thread: string, cached: Promise<BrokerSession>, session: BrokerSession): Promise<void> {
    if ((await cached.catch(() => undefined)) !== session) return;
    if (this.#sessions.get(thread) === cached) this.#sessions.delete(thread);
    session.credentials.close();
  }
}
