import { CAPABILITY_SCOPES, normalizeCapability, SbxError, type CapabilityScope } from '@sbx/protocol';

/** Explicit typing (RFC 8725 §3.11): no other kind of JWT can pass for a capability token. */
export const TOKEN_TYPE = 'sbx-cap+jwt';
export const TOKEN_ALGORITHM = 'HS256';

/**
 * RFC 8693 §4.1: the party acting for `sub` (an agent for a user); a nested `act`
 * names the earlier actor of a delegation chain.
 */
export interface ActorClaim {
  readonly sub: string;
  readonly act?: ActorClaim;
}

/** The payload of a capability token; `aud` is the sandbox id. */
export interface CapabilityClaims {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string;
  /** Space-separated canonical scope names. */
  readonly scope: string;
  readonly thread_id?: string;
  readonly session_id?: string;
  /** Set on tokens minted by token exchange for an actor (docs/protocol.md#token-exchange). */
  readonly act?: ActorClaim;
  readonly jti: string;
  readonly iat: number;
  /**
   * Optional (RFC 7519 §4.1.5): we always mint it; tokens with the minimal claim set
   * (docs/protocol.md#claims) have none.
   */
  readonly nbf?: number;
  readonly exp: number;
}

export interface VerifiedCapability {
  readonly claims: CapabilityClaims;
  /** The granted scopes, canonical, in canonical order. */
  readonly scopes: readonly CapabilityScope[];
  /** The granted scopes plus those they imply (fs:rw → fs:ro, shell → shell:ro). */
  readonly effectiveScopes: ReadonlySet<CapabilityScope>;
  readonly expiresAt: Date;
}

/**
 * Requested names (canonical or alias) to canonical scopes in canonical order.
 * Throws BAD_REQUEST: names usually come from a request the broker relays.
 */
export function normalizeRequestedScopes(names: Iterable<string>): CapabilityScope[] {
  const wanted = new Set<CapabilityScope>();
  for (const name of names) {
    const scope = normalizeCapability(name);
    if (scope === undefined) throw new SbxError('BAD_REQUEST', `unknown capability "${name}"`);
    wanted.add(scope);
  }
  if (wanted.size === 0) throw new SbxError('BAD_REQUEST', 'a token must grant at least one capability');
  return CAPABILITY_SCOPES.filter((scope) => wanted.has(scope));
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
