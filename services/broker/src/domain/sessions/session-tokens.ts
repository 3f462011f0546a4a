// Capability tokens for a binding, signed with its sandbox's own key. Every
// token is recorded (token_issuances, by jti) and audited before it is handed
// out: a token the broker cannot trace is not issued. In opaque mode (D20) the
// holder gets a random string instead, and the row keeps its hash.
//
// Claims: `aud` is the sandbox id, `sub` the actor the binding is for (what the
// agent logs: the human or agent acting, not the service that asked),
// `session_id` the binding id, `thread_id` for thread scopes.
import type { CapabilityScope } from '@sbx/protocol';
import { mintCapabilityToken, newOpaqueToken, opaqueTokenHash, type TokenFormat } from '@sbx/tokens';
import type { NewTokenIssuance, SandboxRecord, SessionBindingRecord } from '../../store/index.js';
import type { AuditContext, AuditTrail } from '../audit/audit-trail.js';
import type { KeyVault } from '../keys/key-vault.js';

export interface IssuedToken {
  readonly token: string;
  readonly jti: string;
  readonly scopes: readonly CapabilityScope[];
  readonly issuedAt: Date;
  readonly expiresAt: Date;
  readonly ttlSeconds: number;
}

export interface SessionTokensDeps {
  readonly vault: KeyVault;
  readonly issuances: { record(issuance: NewTokenIssuance): Promise<unknown> };
  readonly audit: AuditTrail;
  readonly issuer: string;
  readonly now: () => number;
  /** `opaque`: a random token standing for the claims, which only the broker keeps (D20). */
  readonly format?: TokenFormat;
}

export class SessionTokens {
  constructor(private readonly deps: SessionTokensDeps) {}

  async issue(
    context: AuditContext,
    sandbox: SandboxRecord,
    binding: SessionBindingRecord,
    scopes: readonly CapabilityScope[],
    ttlSeconds: number,
  ): Promise<IssuedToken> {
    const { vault, issuances, audit, issuer, now } = this.deps;
    const threadId = binding.scopeType === 'thread' ? binding.scopeId : undefined;
    const minted = mintCapabilityToken({
      key: vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher),
      issuer,
      subject: binding.actorId,
      sandboxId: sandbox.id,
      scopes,
      ttlSeconds,
      sessionId: binding.id,
      now,
      ...(threadId === undefined ? {} : { threadId }),
    });
    const { claims } = minted;
    const issuedAt = new Date(claims.iat * 1000);
    // Opaque mode: the same claims, kept by the broker; the holder gets a random string.
    const token = this.deps.format === 'opaque' ? newOpaqueToken() : minted.token;
    // Queued together, so the group commit writes both in one transaction.
    await Promise.all([
      issuances.record({
        jti: claims.jti,
        subject: claims.sub,
        audience: claims.aud,
        scopes,
        sessionId: binding.id,
        threadId: threadId ?? null,
        requestId: context.requestId,
        issuedAt,
        expiresAt: minted.expiresAt,
        ...(token === minted.token ? {} : { tokenHash: opaqueTokenHash(token) }),
      }),
      audit.record('token.issue', 'ok', context, {
        actor: { type: binding.actorType, id: binding.actorId },
        scope: { type: binding.scopeType, id: binding.scopeId },
        sessionId: binding.id,
        sandboxId: sandbox.id,
        jti: claims.jti,
        scopes,
        detail: { ttl_seconds: ttlSeconds },
      }),
    ]);
    return {
      token,
      jti: claims.jti,
      scopes,
      issuedAt,
      expiresAt: minted.expiresAt,
      ttlSeconds,
    };
  }
}
