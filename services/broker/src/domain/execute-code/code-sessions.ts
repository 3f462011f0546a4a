// The sandbox an agent's execute_code calls run in, kept between calls (docs/execute-code.md
// "Order of a call"). Negotiating on every call would cost more than running `echo 1`; the
// session of the caller's binding is reused while its token has a minute left and, at most,
// half the lease: a negotiation then renews the lease. A session whose agent stops
// answering (suspended, replaced, token revoked) is dropped and negotiated again.
import type { Scope } from '@sbx/protocol';
import type { NetworkEnvironment } from '../../store/index.js';
import type { SessionWithToken } from '../sessions/session-core.js';

export interface CodeSession {
  readonly bindingId: string;
  readonly sandboxId: string;
  readonly scope: Scope;
  readonly environment: NetworkEnvironment;
  readonly httpBaseUrl: string | null;
  readonly token: string;
  /** Reused until then (ms since the epoch). */
  readonly reuseUntil: number;
}

const TOKEN_MARGIN_MS = 60_000;
const MAX_KEPT = 10_000;

export function codeSessionOf(session: SessionWithToken, now: number): CodeSession {
  const leaseHalf = (session.policy.idleTimeoutSeconds * 1000) / 2;
  return {
    bindingId: session.binding.id,
    sandboxId: session.sandbox.id,
    scope: { type: session.sandbox.scopeType, id: session.sandbox.scopeId },
    environment: session.sandbox.environment,
    httpBaseUrl: session.sandbox.httpBaseUrl,
    token: session.token.token,
    reuseUntil: Math.min(session.token.expiresAt.getTime() - TOKEN_MARGIN_MS, now + leaseHalf),
  };
}

export class CodeSessions {
  readonly #kept = new Map<string, CodeSession>();

  get(key: string, now: number): CodeSession | undefined {
    const kept = this.#kept.get(key);
    if (kept === undefined || kept.reuseUntil <= now) {
      this.#kept.delete(key);
      return undefined;
    }
    return kept;
  }

  keep(key: string, session: CodeSession): void {
    if (this.#kept.size >= MAX_KEPT) this.#kept.clear();
    this.#kept.set(key, session);
  }

  drop(key: string): void {
    this.#kept.delete(key);
  }
}
