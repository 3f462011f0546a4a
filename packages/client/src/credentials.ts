/** A token and when it stops working; `refreshBefore` is the broker's hint, when it sent one. */
export interface Credential {
  readonly token: string;
  readonly expiresAt: Date;
  readonly refreshBefore?: Date;
}

/** Where a SandboxClient gets its token; the SDK asks again after every refresh. */
export interface TokenSource {
  current(): Credential;
  /** A new credential (one request however many callers ask at once). */
  refresh(): Promise<Credential>;
  /** The current token, refreshed first when it is due. */
  fresh(): Promise<string>;
  /** Called with every new credential, e.g. to re-authenticate open sockets. */
  onRefresh(listener: (credential: Credential) => void): () => void;
}

export interface RefreshingCredentialsOptions {
  readonly initial: Credential;
  readonly refresh: () => Promise<Credential>;
  /** Refresh on a timer before `refreshBefore` (or 80 % of the lifetime); default true. */
  readonly proactive?: boolean;
  /** A proactive refresh that failed; the next use of the token retries it. */
  readonly onError?: (err: unknown) => void;
  readonly now?: () => number;
}

/**
 * When to refresh a credential received at `receivedAt`: the broker's `refresh_before`
 * when it leaves the token in use for at least half its lifetime, else when 20 % of the
 * lifetime is left (at most one minute before expiry). A hint of "now" (a 60 s token
 * whose 60 s margin has already begun) would otherwise mean a refresh on every call.
 */
export function refreshDueAt(credential: Credential, receivedAt: number): number {
  const expires = credential.expiresAt.getTime();
  const lifetime = Math.max(0, expires - receivedAt);
  const hinted = credential.refreshBefore?.getTime();
  if (hinted !== undefined && hinted >= receivedAt + lifetime / 2) return Math.min(hinted, expires);
  return expires - Math.min(60_000, lifetime * 0.2);
}

/**
 * A token that renews itself before it expires. Refreshes are single-flight, and a
 * timer (unref'd: it never keeps a process alive) refreshes ahead of time so that
 * streams do not see the old token expire.
 */
export class RefreshingCredentials implements TokenSource {
  #current: Credential;
  #receivedAt: number;
  #inFlight: Promise<Credential> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #listeners = new Set<(credential: Credential) => void>();

  constructor(private readonly options: RefreshingCredentialsOptions) {
    this.#current = options.initial;
    this.#receivedAt = this.#now();
    this.#schedule();
  }

  current(): Credential {
    return this.#current;
  }

  refresh(): Promise<Credential> {
    this.#inFlight ??= this.#renew().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #renew(): Promise<Credential> {
    const next = await this.options.refresh();
    this.#current = next;
    this.#receivedAt = this.#now();
    this.#schedule();
    for (const listener of this.#listeners) listener(next);
    return next;
  }

  /** The token, refreshed first when its refresh time has passed. */
  async fresh(): Promise<string> {
    const now = this.#now();
    if (this.dueAt() <= now) return (await this.refresh()).token;
    return this.#current.token;
  }

  /** When the current credential will be (or was due to be) refreshed. */
  dueAt(): number {
    return refreshDueAt(this.#current, this.#receivedAt);
  }

  onRefresh(listener: (credential: Credential) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#listeners.clear();
  }

  #now(): number {
    return (this.options.now ?? Date.now)();
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#closed || this.options.proactive === false) return;
    const delay = Math.max(0, this.dueAt() - this.#now());
    this.#timer = setTimeout(() => {
      this.refresh().catch((err: unknown) => this.options.onError?.(err));
    }, delay);
    this.#timer.unref();
  }
}
