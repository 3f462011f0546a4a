// The subject of a token exchange: a capability token of some sandbox,
// verified with that sandbox's own key as the agent would. Its unverified
// `session_id` and `aud` only pick the rows to look at; a token whose claims
// point at another sandbox fails that sandbox's signature check. Every
// refusal is `invalid_request`, as RFC 8693 §2.2.2 requires for a subject
// token that is invalid or unacceptable, with the same vague description for
// "no such session" and "bad signature" so ids cannot be probed. A revoked subject (by jti,
// session or sandbox: its issuance row says so) is refused as `subject_token was revoked`,
// also when its sandbox's key was rotated since (revoked-token.ts).
import { isTerminalState, MAX_REQUESTED_TTL_SECONDS } from '@sbx/protocol';
import {
  createVerifier,
  isOpaqueToken,
  parseCompactToken,
  TokenError,
  unixSeconds,
  type VerifiedCapability,
} from '@sbx/tokens';
import type {
  SandboxRecord,
  SessionBindingRecord,
  TenantScope,
  TokenIssuanceRepository,
} from '../../store/index.js';
import type { KeyVault } from '../keys/key-vault.js';
import { OAuthError } from './oauth-error.js';
import { findOpaqueIssuance, verifyOpaqueIssuance } from './opaque-subject.js';
import { claimsRevoked, wasRevoked } from './revoked-token.js';

export interface ExchangeSubjectDeps {
  readonly bindings: { findByIdAnyOwner(id: string): Promise<SessionBindingRecord | null> };
  readonly sandboxes: { findById(id: string, scope: TenantScope): Promise<SandboxRecord | null> };
  readonly vault: KeyVault;
  readonly issuer: string;
  readonly now: () => number;
  /** Issuance rows: opaque subjects (D20) are found by their hash, revocations by jti. */
  readonly issuanceRows: Pick<TokenIssuanceRepository, 'findByJti' | 'findByTokenHash'>;
}

export interface ExchangeSubject {
  readonly verified: VerifiedCapability;
  readonly sandbox: SandboxRecord;
  readonly binding: SessionBindingRecord;
  /** Whole seconds the subject token still lives; at least 1. */
  readonly remainingSeconds: number;
}

const NOT_VALID = 'subject_token is not a valid capability token';
const REVOKED = 'subject_token was revoked';

function refuse(description: string = NOT_VALID, cause?: unknown): OAuthError {
  return new OAuthError('invalid_request', description, { cause });
}

export async function resolveExchangeSubject(
  deps: ExchangeSubjectDeps,
  token: string,
): Promise<ExchangeSubject> {
  const claimed = isOpaqueToken(token) ? await opaqueClaims(deps, token) : jwtClaims(deps, token);
  const binding = await deps.bindings.findByIdAnyOwner(claimed.sessionId);
  if (binding === null || binding.sandboxId !== claimed.aud) throw refuse();
  const sandbox = await deps.sandboxes.findById(claimed.aud, { tenantId: binding.tenantId });
  if (sandbox === null) throw refuse();
  const verified = await claimed.verify(sandbox);
  // Only now are the claims trusted; a released session or an ended sandbox mints nothing more,
  // and neither does a revoked token (the agent refuses it already: nothing may replace it).
  if (binding.live !== true) throw refuse('subject_token belongs to a released session');
  if (isTerminalState(sandbox.state)) throw refuse('subject_token belongs to an ended sandbox');
  if (await wasRevoked(deps.issuanceRows, verified.claims)) throw refuse(REVOKED);
  // The verifier forgives clock skew; an exchange never extends a token past its exp.
  const remainingSeconds = verified.claims.exp - unixSeconds(deps.now);
  if (remainingSeconds < 1) throw refuse('subject_token has expired');
  return { verified, sandbox, binding, remainingSeconds };
}

/** Which rows to look at, and how to verify the token once its sandbox is known. */
interface ClaimedSubject {
  readonly sessionId: string;
  readonly aud: string;
  verify(sandbox: SandboxRecord): VerifiedCapability | Promise<VerifiedCapability>;
}

function jwtClaims(deps: ExchangeSubjectDeps, token: string): ClaimedSubject {
  let payload: Record<string, unknown>;
  try {
    payload = parseCompactToken(token);
  } catch (err) {
    throw refuse(`${NOT_VALID} (${err instanceof TokenError ? err.reason : 'malformed'})`, err);
  }
  const sessionId = payload['session_id'];
  const aud = payload['aud'];
  if (typeof sessionId !== 'string' || typeof aud !== 'string') throw refuse();
  return { sessionId, aud, verify: (sandbox) => verifySubject(deps, sandbox, token, payload) };
}

async function opaqueClaims(deps: ExchangeSubjectDeps, token: string): Promise<ClaimedSubject> {
  const issuance = await findOpaqueIssuance(deps.issuanceRows, token);
  if (issuance === null || issuance.sessionId === null) throw refuse();
  return {
    sessionId: issuance.sessionId,
    aud: issuance.audience,
    verify: () => {
      try {
        return verifyOpaqueIssuance(issuance, { issuer: deps.issuer, at: deps.now() });
      } catch (err) {
        if (!(err instanceof TokenError)) throw err;
        throw refuse(err.reason === 'expired' ? 'subject_token has expired' : NOT_VALID, err);
      }
    },
  };
}

async function verifySubject(
  deps: ExchangeSubjectDeps,
  sandbox: SandboxRecord,
  token: string,
  payload: Readonly<Record<string, unknown>>,
): Promise<VerifiedCapability> {
  const verifier = createVerifier({
    keys: deps.vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher),
    issuer: deps.issuer,
    audience: sandbox.id,
    maxTtlSeconds: MAX_REQUESTED_TTL_SECONDS,
    now: deps.now,
  });
  try {
    return verifier.verify(token);
  } catch (err) {
    if (!(err instanceof TokenError)) throw err;
    // After the signature: only a genuine token learns that it expired.
    if (err.reason === 'expired') throw refuse('subject_token has expired', err);
    // Signed with a key rotated away by a sandbox-wide revocation: revoked, not forged.
    const revoked =
      err.reason === 'bad_signature' && (await claimsRevoked(deps.issuanceRows, sandbox.id, payload));
    throw refuse(revoked ? REVOKED : NOT_VALID, err);
  }
}
