// RFC 8693 token exchange (docs/protocol.md#token-exchange): a capability
// token in, a narrower one out, for the same sandbox, subject, session and
// thread, signed with the same sandbox key. Scopes ⊆ the subject's (with the
// implication rules: fs:rw → fs:ro, shell → shell:ro), exp ≤ the subject's,
// `act` naming an authenticated actor when one is given. The new token is
// recorded by jti (with its parent's jti) and audited before it is returned;
// a refusal of a genuine subject token is audited too.
import {
  CAPABILITY_TOKEN_TYPE,
  JWT_TOKEN_TYPE,
  type TokenExchangeRequest,
  type TokenExchangeResponse,
} from '@sbx/protocol';
import { mintCapabilityToken, newOpaqueToken, opaqueTokenHash, type TokenFormat } from '@sbx/tokens';
import type { NewTokenIssuance } from '../../store/index.js';
import type { AuditContext, AuditTrail } from '../audit/audit-trail.js';
import type { Principal } from '../auth/principal.js';
import { defaultActor } from '../sessions/actor-resolution.js';
import { resolveExchangeActor, type ExchangeActorDeps } from './exchange-actor.js';
import {
  resolveExchangeSubject,
  type ExchangeSubject,
  type ExchangeSubjectDeps,
} from './exchange-subject.js';
import { checkRequestShape, requestedLifetime, requestedScopes } from './exchange-request.js';
import { OAuthError } from './oauth-error.js';

export interface TokenExchangeDeps extends ExchangeSubjectDeps, ExchangeActorDeps {
  readonly issuances: { record(issuance: NewTokenIssuance): Promise<unknown> };
  readonly audit: AuditTrail;
  /** Opaque-token mode (D20) hands out opaque tokens here too, whatever the subject was. */
  readonly format: TokenFormat;
}

export async function exchangeToken(
  deps: TokenExchangeDeps,
  request: TokenExchangeRequest,
  requestId: string,
): Promise<TokenExchangeResponse> {
  const issuedType = checkRequestShape(request);
  if (deps.format === 'opaque' && issuedType === JWT_TOKEN_TYPE)
    throw new OAuthError(
      'invalid_request',
      `this broker issues opaque tokens: request ${CAPABILITY_TOKEN_TYPE}`,
    );
  const subject = await resolveExchangeSubject(deps, request.subject_token);
  const { claims } = subject.verified;
  const { binding } = subject;
  // The caller is whoever holds the subject token: audited as its subject, never as the actor.
  const principal: Principal = {
    tenantId: binding.tenantId,
    id: claims.sub,
    type: binding.actorType === 'agent' ? 'agent' : 'user',
    ownerId: binding.ownerId,
    scopes: new Set(),
    via: 'capability_token',
    jti: claims.jti,
  };
  const context = { requestId, principal };
  try {
    return await narrow(deps, request, subject, context, issuedType);
  } catch (err) {
    // A genuine token asking for more than it holds is worth a row: an escalation attempt.
    if (err instanceof OAuthError) {
      await deps.audit.record('token.issue', err.code, context, {
        sessionId: binding.id,
        sandboxId: subject.sandbox.id,
        detail: { grant: 'token_exchange', parent_jti: claims.jti },
      });
    }
    throw err;
  }
}

async function narrow(
  deps: TokenExchangeDeps,
  request: TokenExchangeRequest,
  subject: ExchangeSubject,
  context: AuditContext,
  issuedType: TokenExchangeResponse['issued_token_type'],
): Promise<TokenExchangeResponse> {
  const { verified, sandbox, binding } = subject;
  if (request.audience !== undefined && request.audience !== sandbox.id) {
    throw new OAuthError('invalid_target', 'audience must be the sandbox of the subject_token');
  }
  const scopes = requestedScopes(request.scope, verified.scopes);
  const ttlSeconds = requestedLifetime(request.expires_in, subject.remainingSeconds);
  const actor = await resolveExchangeActor(deps, request, binding.tenantId);
  const { claims } = verified;
  const act = actor === undefined ? claims.act : { sub: actor.id, ...(claims.act && { act: claims.act }) };
  const minted = mintCapabilityToken({
    key: deps.vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher),
    issuer: deps.issuer,
    subject: claims.sub,
    sandboxId: sandbox.id,
    scopes,
    ttlSeconds,
    now: deps.now,
    ...(claims.session_id === undefined ? {} : { sessionId: claims.session_id }),
    ...(claims.thread_id === undefined ? {} : { threadId: claims.thread_id }),
    ...(act === undefined ? {} : { actor: act }),
  });
  const issued = minted.claims;
  const token = deps.format === 'opaque' ? newOpaqueToken() : minted.token;
  await Promise.all([
    deps.issuances.record({
      jti: issued.jti,
      parentJti: claims.jti,
      subject: issued.sub,
      audience: issued.aud,
      scopes,
      sessionId: binding.id,
      threadId: issued.thread_id ?? null,
      requestId: context.requestId,
      issuedAt: new Date(issued.iat * 1000),
      expiresAt: minted.expiresAt,
      ...(token === minted.token ? {} : { tokenHash: opaqueTokenHash(token) }),
    }),
    deps.audit.record('token.issue', 'ok', context, {
      actor: actor === undefined ? { type: binding.actorType, id: claims.sub } : defaultActor(actor),
      scope: { type: binding.scopeType, id: binding.scopeId },
      sessionId: binding.id,
      sandboxId: sandbox.id,
      jti: issued.jti,
      scopes,
      detail: { grant: 'token_exchange', parent_jti: claims.jti, ttl_seconds: ttlSeconds },
    }),
  ]);
  return {
    access_token: token,
    issued_token_type: issuedType,
    token_type: 'Bearer',
    expires_in: ttlSeconds,
    scope: issued.scope,
  };
}
