// From a verified OIDC access token's claims to a Principal.
//
// Principal type, first rule that matches:
//  1. `act` present (RFC 8693 delegation)                 → agent: id = act.sub, owner = sub
//  2. `gty` is "client-credentials", or sub === client id → service (a client acting as itself)
//  3. otherwise                                           → user
// Tenant: the `tenant_id` claim, else DEFAULT_TENANT_ID ("default"): a
// single-tenant identity provider need not add a claim, and owner scoping by
// `sub` still separates its users.
// Scopes: the space-separated `scope` claim; only caller scopes are kept,
// everything else (openid, profile, other APIs' scopes) is ignored.
import { DEFAULT_TENANT_ID, callerScopesFrom, type Principal, type PrincipalType } from './principal.js';
import { invalidToken } from './jws.js';

export interface ClaimRules {
  readonly issuer: string;
  readonly audience: string;
  readonly nowSeconds: number;
  readonly clockToleranceSeconds: number;
}

const MAX_ID_LENGTH = 256;

function isId(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && value.length <= MAX_ID_LENGTH;
}

function optionalId(claims: Record<string, unknown>, name: string): string | undefined {
  const value = claims[name];
  if (value === undefined) return undefined;
  if (!isId(value)) throw invalidToken(`${name} is malformed`);
  return value;
}

function audienceIncludes(aud: unknown, audience: string): boolean {
  if (typeof aud === 'string') return aud === audience;
  return Array.isArray(aud) && aud.includes(audience);
}

/** iss and aud pinned, exp required, nbf honoured; skew forgiven up to the tolerance. */
export function checkRegisteredClaims(claims: Record<string, unknown>, rules: ClaimRules): void {
  if (claims['iss'] !== rules.issuer) throw invalidToken('issuer is not trusted');
  if (!audienceIncludes(claims['aud'], rules.audience)) throw invalidToken('audience is not this broker');
  const { exp, nbf } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) throw invalidToken('exp is missing');
  if (rules.nowSeconds >= exp + rules.clockToleranceSeconds) throw invalidToken('expired');
  if (nbf !== undefined) {
    if (typeof nbf !== 'number' || !Number.isFinite(nbf)) throw invalidToken('nbf is malformed');
    if (rules.nowSeconds + rules.clockToleranceSeconds < nbf) throw invalidToken('not valid yet');
  }
}

/** `act.sub` of a delegated token; undefined when the token is not delegated. */
function actorOf(claims: Record<string, unknown>): string | undefined {
  const act = claims['act'];
  if (act === undefined) return undefined;
  if (typeof act !== 'object' || act === null || !('sub' in act) || !isId(act.sub)) {
    throw invalidToken('act claim has no sub');
  }
  return act.sub;
}

function typeOf(claims: Record<string, unknown>, sub: string, clientId: string | undefined): PrincipalType {
  if (claims['gty'] === 'client-credentials' || sub === clientId) return 'service';
  return 'user';
}

export function principalFromClaims(claims: Record<string, unknown>): Principal {
  const sub = claims['sub'];
  if (!isId(sub)) throw invalidToken('sub is missing');
  const clientId = optionalId(claims, 'client_id') ?? optionalId(claims, 'azp');
  const scope = claims['scope'];
  if (scope !== undefined && typeof scope !== 'string') throw invalidToken('scope is not a string');
  const common = {
    tenantId: optionalId(claims, 'tenant_id') ?? DEFAULT_TENANT_ID,
    scopes: callerScopesFrom((scope ?? '').split(' ')),
    clientId,
    via: 'oidc' as const,
    jti: optionalId(claims, 'jti'),
  };
  const actor = actorOf(claims);
  if (actor !== undefined) {
    return Object.freeze({ ...common, id: actor, type: 'agent', ownerId: sub, actingFor: sub, actor });
  }
  return Object.freeze({ ...common, id: sub, type: typeOf(claims, sub, clientId), ownerId: sub });
}
