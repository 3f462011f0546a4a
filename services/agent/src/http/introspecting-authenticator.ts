// Opaque-token mode (docs/architecture.md D20): the agent cannot verify a token itself and
// asks the broker (POST /oauth/introspect, RFC 7662) as its sandbox, with a secret derived
// from the sandbox's key. Answers, active or not, are cached for at most `cacheMs` (1 s) per
// token; a broker that does not answer in time is 503 BACKEND_UNAVAILABLE, never an accept.
import { SbxError } from '@sbx/protocol';
import {
  capabilityFromIntrospection,
  introspectionAuthorization,
  isOpaqueToken,
  TokenError,
  type VerifiedCapability,
} from '@sbx/tokens';
import type { KeySource } from '../adapters/key-source.js';
import type { AgentMetrics } from '../domain/metrics/agent-metrics.js';
import {
  refusalReason,
  refuseApiKey,
  type Authenticator,
  type OfflineAuthenticator,
} from './authenticator.js';

export interface IntrospectionOptions {
  /** The broker's introspection endpoint. */
  readonly url: string;
  readonly keys: KeySource;
  readonly sandboxId: string;
  readonly issuer: string;
  readonly maxTtlSeconds: number;
  readonly now: () => number;
  /** How long an answer stands (default 900 ms, so a change shows within 1 s; at most 1000 ms). */
  readonly cacheMs?: number;
  /** How long the broker may take (default 2000 ms). */
  readonly timeoutMs?: number;
  readonly cacheSize?: number;
  readonly metrics?: Pick<AgentMetrics, 'authFailed'> | undefined;
  /**
   * Checks what is not an opaque token: JWTs signed with the sandbox's key (the provider's
   * readiness probe), still subject to the pushed revocation list. Absent: refused.
   */
  readonly offline?: OfflineAuthenticator | undefined;
}

type Answer = VerifiedCapability | SbxError;

function inactive(): SbxError {
  return new SbxError('UNAUTHENTICATED', 'token is not active', { details: { reason: 'revoked' } });
}

function unavailable(cause: unknown): SbxError {
  return new SbxError('BACKEND_UNAVAILABLE', 'the broker did not answer the token introspection', { cause });
}

export function createIntrospectingAuthenticator(options: IntrospectionOptions): Authenticator {
  const cacheMs = Math.min(options.cacheMs ?? 900, 1000);
  const limit = options.cacheSize ?? 10_000;
  const cache = new Map<string, { readonly at: number; readonly answer: Answer }>();
  const inFlight = new Map<string, Promise<Answer>>();
  const listeners = new Set<() => void>();
  let ticker: NodeJS.Timeout | undefined;

  async function ask(token: string): Promise<Answer> {
    const key = options.keys.current().keys[0];
    if (key === undefined) throw unavailable(new Error('no signing key'));
    let res: Response;
    try {
      res = await fetch(options.url, {
        method: 'POST',
        headers: {
          authorization: introspectionAuthorization(key, options.sandboxId),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ token }).toString(),
        signal: AbortSignal.timeout(options.timeoutMs ?? 2000),
      });
    } catch (err) {
      throw unavailable(err);
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (res.status !== 200 || typeof body !== 'object' || body === null || !('active' in body))
      throw unavailable(new Error(`introspection answered ${res.status}`));
    if (body.active !== true) return inactive();
    try {
      return capabilityFromIntrospection(
        { ...body },
        {
          issuer: options.issuer,
          audience: options.sandboxId,
          maxTtlSeconds: options.maxTtlSeconds,
          clockToleranceSeconds: 0,
        },
        Math.floor(options.now() / 1000),
      );
    } catch (err) {
      return SbxError.from(err);
    }
  }

  function remember(token: string, answer: Answer): Answer {
    if (cache.size >= limit) {
      const oldest = cache.keys().next();
      if (oldest.done !== true) cache.delete(oldest.value);
    }
    cache.set(token, { at: options.now(), answer });
    return answer;
  }

  async function answerFor(token: string): Promise<Answer> {
    refuseApiKey(token);
    if (!isOpaqueToken(token)) return new TokenError('malformed', 'not an opaque token');
    const hit = cache.get(token);
    if (hit !== undefined && options.now() - hit.at < cacheMs) return hit.answer;
    cache.delete(token);
    const pending = inFlight.get(token) ?? ask(token).then((answer) => remember(token, answer));
    inFlight.set(token, pending);
    try {
      return await pending;
    } finally {
      inFlight.delete(token);
    }
  }

  async function authenticate(token: string): Promise<VerifiedCapability> {
    const answer = await answerFor(token);
    if (answer instanceof SbxError) throw answer;
    if (answer.expiresAt.getTime() <= options.now()) throw new TokenError('expired', 'token has expired');
    return answer;
  }

  async function counted(token: string): Promise<VerifiedCapability> {
    try {
      return await authenticate(token);
    } catch (err) {
      options.metrics?.authFailed(refusalReason(err));
      throw err;
    }
  }

  return {
    // A JWT goes to the offline authenticator, at once (it counts its own refusals).
    authenticate: (token) =>
      options.offline !== undefined && !isOpaqueToken(token)
        ? options.offline.authenticate(token)
        : counted(token),
    // No list is pushed in this mode: open WebSockets re-check their token twice per cache period.
    onRevocation(listener) {
      const offline = options.offline?.onRevocation?.(listener);
      listeners.add(listener);
      ticker ??= setInterval(() => {
        for (const each of listeners) each();
      }, cacheMs / 2).unref();
      return () => {
        offline?.();
        listeners.delete(listener);
        if (listeners.size > 0) return;
        clearInterval(ticker);
        ticker = undefined;
      };
    },
  };
}
