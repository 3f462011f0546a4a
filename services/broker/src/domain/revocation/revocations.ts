// Revocation (docs/security.md#revocation, docs/architecture.md D18): the broker tells
// the sandbox's provider which tokens its agent must refuse from now on. One token or
// one binding's tokens go on the sandbox's revocation list (by jti, with their expiry
// so the list stays small); a whole sandbox gets a new key, stored sealed so later
// tokens are minted with it, and a `not_before` that retires the old key without grace.
import { SbxError } from '@sbx/protocol';
import { SigningKey } from '@sbx/tokens';
import type { Revocation, SandboxProvider } from '../../providers/provider.js';
import type { LiveToken, RevocationStore } from '../../store/index.js';
import type { AuditContext, AuditTrail } from '../audit/audit-trail.js';
import { outcomeOf, OUTCOME_OK } from '../audit/audit-trail.js';
import type { KeyVault } from '../keys/key-vault.js';

export type RevocationTarget =
  { readonly jti: string } | { readonly session_id: string } | { readonly sandbox_id: string };

export interface RevocationOutcome {
  /** The sandboxes whose agents were told. */
  readonly sandboxIds: readonly string[];
  /** Tokens put on revocation lists (0 for a sandbox: its key was rotated instead). */
  readonly revokedTokens: number;
  readonly keyRotated: boolean;
}

export interface RevocationDeps {
  readonly store: Pick<
    RevocationStore,
    | 'liveTokensOfSession'
    | 'findToken'
    | 'sessionExists'
    | 'findSandbox'
    | 'replaceSigningKey'
    | 'markRevoked'
  >;
  readonly provider: Pick<SandboxProvider, 'revoke' | 'rotateKey'>;
  readonly vault: Pick<KeyVault, 'sealSigningKey' | 'forget'>;
  readonly audit: AuditTrail;
  readonly now: () => number;
  /** Tells the other broker instances to drop their cached copy of a rotated key. */
  readonly announceRotation?: ((sandboxId: string) => Promise<void>) | undefined;
}

/**
 * Tells the sandbox's agent. A sandbox that is gone has no agent left to refuse anything:
 * nothing to tell; nor has one that ended meanwhile. Releases of one sandbox's
 * bindings race: the last one terminates the sandbox and its destroy removes the revocation
 * list's directory while an earlier one, already released, is still writing there (a 503
 * for a release that happened, reliability/load/ensure-race.test.ts). A terminated sandbox's
 * agent is being destroyed: it has nothing left to refuse.
 */
async function tell(
  { store, provider }: Pick<RevocationDeps, 'store' | 'provider'>,
  sandboxId: string,
  revocation: Revocation,
): Promise<void> {
  try {
    await provider.revoke(sandboxId, revocation);
  } catch (err) {
    if (err instanceof SbxError && err.code === 'SANDBOX_NOT_FOUND') return;
    const sandbox = await store.findSandbox(sandboxId);
    if (sandbox !== null && sandbox.state !== 'terminated') throw err;
  }
}

/** Marks `tokens` revoked and puts them on their sandboxes' revocation lists; the sandbox ids told. */
async function revokeTokens(
  { store, provider, now }: Pick<RevocationDeps, 'store' | 'provider' | 'now'>,
  tokens: readonly LiveToken[],
): Promise<string[]> {
  // First the mark introspection reads (opaque tokens, D20): refused at once, whatever the agent.
  if (tokens.length > 0) await store.markRevoked({ jtis: tokens.map((token) => token.jti) }, new Date(now()));
  const bySandbox = new Map<string, Revocation['jtis'][number][]>();
  for (const token of tokens) {
    const list = bySandbox.get(token.audience) ?? [];
    list.push({ jti: token.jti, expiresAt: token.expiresAt });
    bySandbox.set(token.audience, list);
  }
  await Promise.all(
    [...bySandbox].map(([sandboxId, jtis]) => tell({ store, provider }, sandboxId, { jtis })),
  );
  return [...bySandbox.keys()];
}

/** Session release: the binding's live tokens stop working (no audit row of its own). */
export async function revokeSessionTokens(
  deps: Pick<RevocationDeps, 'store' | 'provider' | 'now'>,
  sessionId: string,
): Promise<number> {
  const tokens = await deps.store.liveTokensOfSession(sessionId, new Date(deps.now()));
  await revokeTokens(deps, tokens);
  return tokens.length;
}

export class Revocations {
  constructor(private readonly deps: RevocationDeps) {}

  /** Revokes what `target` names; audited as `token.revoke`, refusals included. */
  async revoke(context: AuditContext, target: RevocationTarget): Promise<RevocationOutcome> {
    const subject = {
      ...('jti' in target ? { jti: target.jti } : {}),
      ...('session_id' in target ? { sessionId: target.session_id } : {}),
      ...('sandbox_id' in target ? { sandboxId: target.sandbox_id } : {}),
    };
    try {
      const outcome = await this.#revoke(target);
      await this.deps.audit.record('token.revoke', OUTCOME_OK, context, {
        ...subject,
        ...(outcome.sandboxIds.length === 1 ? { sandboxId: outcome.sandboxIds[0] } : {}),
        detail: { revoked_tokens: outcome.revokedTokens, key_rotated: outcome.keyRotated },
      });
      return outcome;
    } catch (err) {
      await this.deps.audit.record('token.revoke', outcomeOf(err), context, subject);
      throw err;
    }
  }

  async #revoke(target: RevocationTarget): Promise<RevocationOutcome> {
    const { store } = this.deps;
    if ('jti' in target) {
      const token = await store.findToken(target.jti);
      if (token === null) throw new SbxError('NOT_FOUND', 'no token with this jti was issued');
      const sandboxIds = await revokeTokens(this.deps, [token]);
      return { sandboxIds, revokedTokens: 1, keyRotated: false };
    }
    if ('session_id' in target) {
      if (!(await store.sessionExists(target.session_id)))
        throw new SbxError('SESSION_NOT_FOUND', `session ${target.session_id} does not exist`);
      const tokens = await store.liveTokensOfSession(target.session_id, new Date(this.deps.now()));
      const sandboxIds = await revokeTokens(this.deps, tokens);
      return { sandboxIds, revokedTokens: tokens.length, keyRotated: false };
    }
    return this.#rotate(target.sandbox_id);
  }

  /** Every token of the sandbox: a new key everywhere, the old one retired without grace. */
  async #rotate(sandboxId: string): Promise<RevocationOutcome> {
    const { store, provider, vault, now } = this.deps;
    const sandbox = await store.findSandbox(sandboxId);
    if (sandbox === null) throw new SbxError('SANDBOX_NOT_FOUND', `sandbox ${sandboxId} does not exist`);
    const key = SigningKey.generate();
    // Stored first: were the agent told first, tokens minted meanwhile would fail there.
    try {
      await store.replaceSigningKey(sandboxId, vault.sealSigningKey(sandboxId, key));
    } catch (err) {
      vault.forget(sandboxId); // sealing cached the new key: the stored one is still the old
      throw err;
    }
    // Before the agent learns the new key: no instance should mint with the old one past that.
    await this.deps.announceRotation?.(sandboxId);
    await store.markRevoked({ sandboxId }, new Date(now()));
    await provider.rotateKey(sandboxId, key);
    await provider.revoke(sandboxId, { jtis: [], notBefore: new Date(now()) });
    return { sandboxIds: [sandboxId], revokedTokens: 0, keyRotated: true };
  }
}
