// What every session operation shares: dependencies, settings, the policy
// lookups, and the audit wrapper that writes one row per operation whether it
// succeeds or is refused.
import type { Logger } from '@sbx/service-kit';
import type { TokenFormat } from '@sbx/tokens';
import type { SandboxProvider } from '../../providers/provider.js';
import type { Repositories, SandboxRecord, SessionBindingRecord } from '../../store/index.js';
import {
  outcomeOf,
  OUTCOME_OK,
  type AuditAction,
  type AuditContext,
  type AuditSubject,
  type AuditTrail,
} from '../audit/audit-trail.js';
import { resolveClientPolicy, type ResolvedClientPolicy } from '../auth/client-policy.js';
import type { Principal } from '../auth/principal.js';
import type { KeyVault } from '../keys/key-vault.js';
import { DEFAULT_ACTOR_POLICY, type ActorPolicy } from './capability-grant.js';
import type { SandboxLifecycle } from './sandbox-lifecycle.js';
import { effectivePolicy, type EffectivePolicy } from './session-policy.js';
import type { IssuedToken, SessionTokens } from './session-tokens.js';

export type SessionRepositories = Pick<
  Repositories,
  | 'sandboxes'
  | 'bindings'
  | 'tokens'
  | 'policies'
  | 'sessionTransactions'
  | 'journal'
  | 'revocations'
  | 'audit'
>;

export interface SessionSettings {
  /** `iss` of capability tokens; the agents accept this issuer (default `sbx-broker`). */
  readonly tokenIssuer: string;
  /** `jwt` (default) or `opaque` tokens, checked by the agent through introspection (D20). */
  readonly tokenFormat: TokenFormat;
  /** Token lifetime when the request names none, clamped to the tenant's maximum (default 900). */
  readonly defaultTokenTtlSeconds: number;
  /** Lease and hard TTL for tenants without a stored policy (defaults 900 and 28 800). */
  readonly idleTimeoutSeconds: number;
  readonly hardTtlSeconds: number;
  /** How long a request waits for another request's sandbox to come up before 423 (default 10 s). */
  readonly provisioningWaitMs: number;
  /** An expired token still proves possession on thread refresh for this long (default 300 s). */
  readonly refreshGraceSeconds: number;
  readonly actorPolicy: ActorPolicy;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = Object.freeze({
  tokenIssuer: 'sbx-broker',
  tokenFormat: 'jwt',
  defaultTokenTtlSeconds: 900,
  idleTimeoutSeconds: 900,
  hardTtlSeconds: 28_800,
  provisioningWaitMs: 10_000,
  refreshGraceSeconds: 300,
  actorPolicy: DEFAULT_ACTOR_POLICY,
});

export interface SessionCore {
  readonly repositories: SessionRepositories;
  readonly provider: SandboxProvider;
  readonly vault: KeyVault;
  readonly audit: AuditTrail;
  readonly lifecycle: SandboxLifecycle;
  readonly tokens: SessionTokens;
  readonly settings: SessionSettings;
  readonly logger: Logger;
  readonly now: () => number;
}

/** A session as the routes present it. */
export interface SessionState {
  readonly binding: SessionBindingRecord;
  readonly sandbox: SandboxRecord;
  readonly policy: EffectivePolicy;
  readonly isolation: SandboxProvider['isolation'];
}

export interface SessionWithToken extends SessionState {
  readonly token: IssuedToken;
}

export function tenantPolicy(core: SessionCore, tenantId: string): Promise<EffectivePolicy> {
  return effectivePolicy(core.repositories.policies, tenantId, core.settings);
}

export function clientPolicy(core: SessionCore, principal: Principal): Promise<ResolvedClientPolicy> {
  return resolveClientPolicy(principal, core.repositories.policies);
}

export type MutableAuditSubject = { -readonly [K in keyof AuditSubject]: AuditSubject[K] };

/** Runs `operation`, then writes its audit row: `ok`, or the error code it was refused with. */
export async function audited<T>(
  core: SessionCore,
  action: AuditAction,
  context: AuditContext,
  subject: MutableAuditSubject,
  operation: () => Promise<T>,
): Promise<T> {
  let result: T;
  try {
    result = await operation();
  } catch (err) {
    await core.audit.record(action, outcomeOf(err), context, subject);
    throw err;
  }
  await core.audit.record(action, OUTCOME_OK, context, subject);
  return result;
}

/** Fills an audit subject from a binding. */
export function describeBinding(subject: MutableAuditSubject, binding: SessionBindingRecord): void {
  subject.actor = { type: binding.actorType, id: binding.actorId };
  subject.scope = { type: binding.scopeType, id: binding.scopeId };
  subject.sessionId = binding.id;
  subject.sandboxId = binding.sandboxId;
}
