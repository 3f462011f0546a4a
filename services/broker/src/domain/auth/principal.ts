// The authenticated caller of the broker API, however it authenticated.
//
// Identity rules (one place, so every route reads them the same way):
//  - `id` is who is making the call. For a delegated token (RFC 8693 `act`
//    claim) that is the acting agent, `act.sub`.
//  - `ownerId` is whose resources the call touches: the principal itself, or
//    for a delegated agent the delegator, the token's `sub`. A user's agent
//    therefore creates and sees the user's sandboxes, as owner scoping
//    (docs/protocol.md#callers-and-caller-scopes) requires.
//  - `actingFor` (the delegator) and `actor` (the acting agent) are set only for
//    delegated principals, so audit records name both parties explicitly.
//
// Scope rules (docs/protocol.md#callers-and-caller-scopes): scopes are exact;
// none implies another. exec:sandbox does not grant attach:sandbox, and
// admin:sandbox grants neither: it opens /admin/* and lifts owner scoping, nothing more. A superadmin that
// also needs to read or attach holds those scopes as well. admin:keys only lets /admin/api-keys issue
// keys for other tenants and principals (domain/admin/api-key-grant.ts).
import { CallerScope, SbxError, type ErrorCode } from '@sbx/protocol';

export type PrincipalType = 'user' | 'service' | 'agent';

/** The tenant of a caller whose credential names none (an OIDC token without `tenant_id`). */
export const DEFAULT_TENANT_ID = 'default';

export interface Principal {
  readonly tenantId: string;
  readonly id: string;
  readonly type: PrincipalType;
  readonly ownerId: string;
  readonly actingFor?: string | undefined;
  readonly actor?: string | undefined;
  readonly scopes: ReadonlySet<CallerScope>;
  /** The OAuth client the token was issued to; API keys have none. */
  readonly clientId?: string | undefined;
  /** capability_token: the holder of a capability token (token exchange, docs/protocol.md#token-exchange). */
  readonly via: 'api_key' | 'oidc' | 'capability_token';
  /** The API key's id (api_key) or the token's `jti` (oidc), for audit. */
  readonly keyId?: string | undefined;
  readonly jti?: string | undefined;
}

/** A stored resource as owner scoping sees it. */
export interface OwnedResource {
  readonly tenantId: string;
  readonly ownerId: string;
}

/** The owner a listing is restricted to, or 'all' for an admin. */
export type OwnerFilter = OwnedResource | 'all';

export type NotFoundCode = Extract<
  ErrorCode,
  'NOT_FOUND' | 'SANDBOX_NOT_FOUND' | 'SESSION_NOT_FOUND' | 'BINDING_NOT_FOUND'
>;

/** The caller scopes among `names`; anything else (capability scopes, openid, typos) is dropped. */
export function callerScopesFrom(names: Iterable<string>): ReadonlySet<CallerScope> {
  const scopes = new Set<CallerScope>();
  for (const name of names) {
    const parsed = CallerScope.safeParse(name);
    if (parsed.success) scopes.add(parsed.data);
  }
  return scopes;
}

export function hasCallerScope(principal: Principal, scope: CallerScope): boolean {
  return principal.scopes.has(scope);
}

/** 403 naming `scope` unless the caller holds it itself: none implies another, admin included. */
export function requireCallerScope(principal: Principal, scope: CallerScope): void {
  if (!hasCallerScope(principal, scope))
    throw new SbxError('FORBIDDEN', `this operation needs the caller scope ${scope}`);
}

/** Cross-tenant superadmin: /admin/* and no owner scoping. */
export function isAdmin(principal: Principal): boolean {
  return principal.scopes.has('admin:sandbox');
}

export function ownerFilter(principal: Principal): OwnerFilter {
  return isAdmin(principal) ? 'all' : { tenantId: principal.tenantId, ownerId: principal.ownerId };
}

export function owns(principal: Principal, resource: OwnedResource): boolean {
  if (isAdmin(principal)) return true;
  return resource.tenantId === principal.tenantId && resource.ownerId === principal.ownerId;
}

/**
 * Throws the given NOT_FOUND-family error unless the resource exists and the
 * caller may see it. Another owner's resource is indistinguishable from a
 * missing one (404, never 403), so ids cannot be probed.
 */
export function assertOwns<T extends OwnedResource>(
  principal: Principal,
  resource: T | null | undefined,
  code: NotFoundCode,
  message: string,
): asserts resource is T {
  if (resource === null || resource === undefined || !owns(principal, resource)) {
    throw new SbxError(code, message);
  }
}
