// Tokens the broker mints for itself to carry one relayed call to a sandbox's agent
// (docs/sandboxes.md "Relay"): one capability, a short life, recorded by jti like every
// token so the audit of the relayed call links to it. Never handed to the caller.
import type { CapabilityScope } from '@sbx/protocol';
import { mintCapabilityToken } from '@sbx/tokens';
import type { NewTokenIssuance, SandboxRecord } from '../../store/index.js';
import type { KeyVault } from '../keys/key-vault.js';

/** Long enough for a large upload to start; the agent checks the token when a request or socket begins. */
export const RELAY_TOKEN_TTL_SECONDS = 300;

export interface RelayTokenDeps {
  readonly vault: Pick<KeyVault, 'openSigningKey'>;
  readonly issuances: { record(issuance: NewTokenIssuance): Promise<unknown> };
  readonly issuer: string;
  readonly now: () => number;
}

export interface RelayToken {
  readonly token: string;
  readonly jti: string;
  /** Kept from an earlier call (RelayTokens), not minted for this one. */
  readonly kept?: boolean;
}

/** Whom a relay token names: `sub`, and for a delegated caller the agent acting (`act`). */
export interface RelaySubject {
  readonly sub: string;
  readonly actor?: string | undefined;
}

export async function mintRelayToken(
  deps: RelayTokenDeps,
  sandbox: SandboxRecord,
  subject: RelaySubject,
  capability: CapabilityScope,
  requestId: string,
): Promise<RelayToken> {
  const minted = mintCapabilityToken({
    key: deps.vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher),
    issuer: deps.issuer,
    subject: subject.sub,
    sandboxId: sandbox.id,
    scopes: [capability],
    ttlSeconds: RELAY_TOKEN_TTL_SECONDS,
    now: deps.now,
    ...(subject.actor === undefined ? {} : { actor: { sub: subject.actor } }),
  });
  await deps.issuances.record({
    jti: minted.claims.jti,
    subject: subject.sub,
    audience: sandbox.id,
    scopes: [capability],
    requestId,
    issuedAt: new Date(minted.claims.iat * 1000),
    expiresAt: minted.expiresAt,
  });
  return { token: minted.token, jti: minted.claims.jti };
}

/** Reused while it has this long left: a call may start a long upload with it. */
const REUSE_MARGIN_MS = 120_000;
const MAX_KEPT = 10_000;

/**
 * Relay tokens kept for reuse (docs/sandboxes.md "The relay"): minting and recording one per
 * call would cost a database commit each. One per sandbox, caller and capability, reused
 * while it has two minutes left. The key includes the sandbox's sealed key: rotating it
 * (a sandbox-wide revocation) makes every kept token of that sandbox unusable, and the next
 * call mints one under the new key.
 */
export class RelayTokens {
  readonly #kept = new Map<string, RelayToken & { readonly expiresAt: number }>();

  constructor(private readonly deps: RelayTokenDeps) {}

  async get(
    sandbox: SandboxRecord,
    subject: RelaySubject,
    capability: CapabilityScope,
    requestId: string,
  ): Promise<RelayToken> {
    const sealedKey = Buffer.from(sandbox.signingKeyCipher).toString('base64url');
    const key = `${sandbox.id}\n${sealedKey}\n${subject.sub}\n${subject.actor ?? ''}\n${capability}`;
    const kept = this.#kept.get(key);
    if (kept !== undefined && kept.expiresAt - this.deps.now() > REUSE_MARGIN_MS)
      return { ...kept, kept: true };
    const minted = await mintRelayToken(this.deps, sandbox, subject, capability, requestId);
    if (this.#kept.size >= MAX_KEPT) this.#kept.clear();
    this.#kept.set(key, { ...minted, expiresAt: this.deps.now() + RELAY_TOKEN_TTL_SECONDS * 1000 });
    return minted;
  }

  /**
   * The agent refused this kept token (an operator revoked its jti): the next call mints
   * one, instead of every call of this caller failing until the token would expire.
   */
  retire(jti: string): void {
    for (const [key, kept] of this.#kept) if (kept.jti === jti) this.#kept.delete(key);
  }
}
