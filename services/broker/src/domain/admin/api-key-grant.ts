// Who may issue which API key (docs/admin.md, "API keys"). An admin key once minted
// keys with any scope, in any tenant, as any principal, so `admin:sandbox` alone was
// every scope of every tenant. Two rules now, for every route that issues a key
// (create and rotate):
//  - a caller grants only caller scopes it holds itself (none implies another, so
//    admin:sandbox grants no exec, and only a holder of admin:keys grants admin:keys);
//  - a key for anyone but the caller itself (another tenant, principal id or principal
//    type) needs the operator scope admin:keys. It lifts this rule, never the first.
// The bootstrap and generated admin keys hold every caller scope, admin:keys included.
import { SbxError, type CallerScope } from '@sbx/protocol';
import { callerScopesFrom, type Principal, type PrincipalType } from '../auth/principal.js';

/** The operator scope: issue keys for other tenants and principals. */
export const OPERATOR_SCOPE = 'admin:keys' satisfies CallerScope;

/** The identity and scopes of a key about to be issued. */
export interface IssuedKey {
  readonly tenantId: string;
  readonly principalId: string;
  readonly principalType: PrincipalType;
  /** Stored names; only the caller scopes among them grant anything, so only they count. */
  readonly scopes: readonly string[];
}

/** 403 FORBIDDEN unless `caller` may issue `key` (checked before anything is stored). */
export function assertMayIssue(caller: Principal, key: IssuedKey): void {
  const lacking = [...callerScopesFrom(key.scopes)].filter((scope) => !caller.scopes.has(scope));
  if (lacking.length > 0) {
    throw new SbxError(
      'FORBIDDEN',
      `a caller grants only caller scopes it holds; it lacks ${lacking.join(' ')}`,
    );
  }
  const itself =
    key.tenantId === caller.tenantId && key.principalId === caller.id && key.principalType === caller.type;
  if (!itself && !caller.scopes.has(OPERATOR_SCOPE)) {
    throw new SbxError(
      'FORBIDDEN',
      `a key for another tenant or principal needs the caller scope ${OPERATOR_SCOPE}`,
    );
  }
}
