// What a holder does with its session: inspect it, refresh its token, keep the
// lease alive, release it. Releasing the last binding of a sandbox terminates
// and destroys the sandbox; releasing one of several leaves it to the others.
import {
  normalizeCapability,
  SbxError,
  strongestScopes,
  type CapabilityScope,
  type SandboxState,
} from '@sbx/protocol';
import type { SandboxRecord, SessionBindingRecord } from '../../store/index.js';
import type { AuditContext } from '../audit/audit-trail.js';
import { revokeSessionTokens } from '../revocation/revocations.js';
import { requireHolderScope } from './actor-resolution.js';
import { auditSandbox } from './sandbox-audit.js';
import { locateBinding, locatorSubject, type BindingLocator } from './binding-locator.js';
import { sandboxEnded } from './session-ending.js';
import { assertGranted, callerCeiling, grantCapabilities, sameScopes } from './capability-grant.js';
import {
  audited,
  clientPolicy,
  describeBinding,
  tenantPolicy,
  type MutableAuditSubject,
  type SessionCore,
  type SessionState,
  type SessionWithToken,
} from './session-core.js';
import { sandboxStarting, sessionExpired } from './session-errors.js';
import { leaseUntil, tokenLifetime, type EffectivePolicy } from './session-policy.js';
import { proveTokenPossession } from './token-possession.js';

export interface RefreshOptions {
  readonly ttlSeconds?: number | undefined;
  /** Thread refresh: the current token, which must verify for this binding's sandbox and session. */
  readonly currentToken?: string | undefined;
  /** This token only carries these (within what the binding holds); the binding is unchanged. */
  readonly capabilities?: readonly CapabilityScope[] | undefined;
}

export interface Heartbeat {
  readonly sandboxId: string;
  readonly leaseExpiresAt: Date;
  readonly state: SandboxState;
  /** The sandbox as it now serves (resumed agents may listen at new addresses). */
  readonly sandbox: SandboxRecord;
}

/** The caller's live binding and its live sandbox; 404 for someone else's, 410 once ended. */
async function liveSession(
  core: SessionCore,
  context: AuditContext,
  locator: BindingLocator,
  subject: MutableAuditSubject,
): Promise<{ binding: SessionBindingRecord; sandbox: SandboxRecord }> {
  requireHolderScope(context.principal);
  const binding = await locateBinding(core.repositories.bindings, context.principal, locator);
  describeBinding(subject, binding);
  const sandbox = await core.repositories.sandboxes.findById(binding.sandboxId, {
    tenantId: binding.tenantId,
  });
  // An ended sandbox first: its end released the binding too, and says more than that.
  if (sandbox?.live !== true)
    throw await sandboxEnded(core.repositories.audit, core.logger, binding.id, sandbox);
  if (binding.live !== true) throw sessionExpired(binding.id);
  return { binding, sandbox };
}

export function getSession(
  core: SessionCore,
  context: AuditContext,
  locator: BindingLocator,
): Promise<SessionState> {
  const subject: MutableAuditSubject = locatorSubject(locator);
  return audited(core, 'session.get', context, subject, async () => {
    const found = await liveSession(core, context, locator, subject);
    const { binding } = found;
    const policy = await tenantPolicy(core, binding.tenantId);
    const sandbox = await withDataplane(core, context, found.sandbox, policy, binding.id);
    // A sandbox still provisioning has no dataplane to show yet.
    if (sandbox.httpBaseUrl === null || sandbox.wsBaseUrl === null) throw sandboxStartingOrGone(sandbox);
    return { binding, sandbox, policy, isolation: core.provider.isolation };
  });
}

export function refreshSession(
  core: SessionCore,
  context: AuditContext,
  locator: BindingLocator,
  options: RefreshOptions = {},
): Promise<SessionWithToken> {
  const subject: MutableAuditSubject = locatorSubject(locator);
  return audited(core, 'session.refresh', context, subject, async () => {
    const found = await liveSession(core, context, locator, subject);
    const { binding } = found;
    const proof =
      options.currentToken === undefined
        ? undefined
        : await proveTokenPossession(core, found.sandbox, binding, options.currentToken);
    const policy = await tenantPolicy(core, binding.tenantId);
    const sandbox = await core.lifecycle.ready(context, found.sandbox, policy);
    if (sandbox === null) throw sessionExpired(binding.id);
    // Policies and the caller's key may have changed since the binding was made.
    const client = await clientPolicy(core, context.principal);
    const held = binding.capabilities.flatMap((name) => normalizeCapability(name) ?? []);
    const capabilities = grantCapabilities(held, [
      core.settings.actorPolicy[binding.actorType],
      policy.allowedCapabilities,
      client.maxCapabilities,
      callerCeiling(context.principal),
    ]);
    assertGranted(capabilities, held);
    const narrowed = options.capabilities;
    const issued = narrowed === undefined ? capabilities : grantCapabilities(narrowed, [capabilities]);
    if (narrowed !== undefined && !sameScopes(issued, strongestScopes(narrowed)))
      throw new SbxError(
        'CAPABILITY_DENIED',
        `this session holds ${capabilities.join(' ')}, not ${narrowed.join(' ')}`,
      );
    subject.scopes = issued;
    const requestedTtl = options.ttlSeconds ?? proof?.ttlSeconds;
    const ttl = tokenLifetime(requestedTtl, core.settings.defaultTokenTtlSeconds, policy.maxTokenTtlSeconds);
    const token = await core.tokens.issue(context, sandbox, binding, issued, ttl);
    subject.jti = token.jti;
    return { binding, sandbox, policy, isolation: core.provider.isolation, token };
  });
}

export function heartbeatSession(
  core: SessionCore,
  context: AuditContext,
  locator: BindingLocator,
): Promise<Heartbeat> {
  const subject: MutableAuditSubject = locatorSubject(locator);
  return audited(core, 'session.heartbeat', context, subject, async () => {
    const { binding, sandbox } = await liveSession(core, context, locator, subject);
    const { sandboxes, bindings } = core.repositories;
    const policy = await tenantPolicy(core, binding.tenantId);
    // Past its hard TTL a sandbox is over whatever its state: the reaper terminates it next.
    if (sandbox.hardExpiresAt.getTime() <= core.now()) throw sessionExpired(binding.id);
    // A holder is here again: idle and suspended are the reaper's "nobody is here" marks, and
    // reactivating (restarting the agent of a suspended one) takes the sandbox lock.
    const away = sandbox.state === 'idle' || sandbox.state === 'suspended';
    const serving = away ? await core.lifecycle.ready(context, sandbox, policy) : sandbox;
    if (serving === null) throw sessionExpired(binding.id);
    const state = serving.state;
    const now = core.now(); // after a resume, which may take seconds
    const leaseExpiresAt = leaseUntil(now, policy.idleTimeoutSeconds, sandbox.hardExpiresAt);
    if (!(await sandboxes.renewLease(sandbox.id, leaseExpiresAt, new Date(now))))
      throw sessionExpired(binding.id);
    await bindings.touch(binding.id, new Date(now));
    subject.detail = { lease_expires_at: leaseExpiresAt.toISOString() };
    return { sandboxId: sandbox.id, leaseExpiresAt, state, sandbox: serving };
  });
}

/** Idempotent: releasing a released binding answers as the first release did. */
export function releaseSession(
  core: SessionCore,
  context: AuditContext,
  locator: BindingLocator,
): Promise<void> {
  const subject: MutableAuditSubject = locatorSubject(locator);
  return audited(core, 'session.release', context, subject, async () => {
    requireHolderScope(context.principal);
    const binding = await locateBinding(core.repositories.bindings, context.principal, locator);
    describeBinding(subject, binding);
    const outcome = await core.repositories.sessionTransactions.releaseBinding(
      binding.id,
      new Date(core.now()),
    );
    if (outcome === null) throw new SbxError('INTERNAL', `binding ${binding.id} vanished during release`);
    subject.detail = { released_now: outcome.releasedNow, sandbox_terminated: outcome.terminated !== null };
    if (outcome.terminated === null) {
      // The sandbox lives on for others: this binding's tokens must stop working now, not at exp.
      // Also on a repeated release, so a release whose revocation failed can simply be retried.
      const revoked = await revokeSessionTokens(
        { store: core.repositories.revocations, provider: core.provider, now: core.now },
        binding.id,
      );
      subject.detail = { ...subject.detail, revoked_tokens: revoked };
      return;
    }
    await auditSandbox(core.audit, 'sandbox.terminated', 'ok', context, outcome.terminated, {
      reason: 'last_binding_released',
    });
    await core.lifecycle.destroy(context, outcome.terminated);
  });
}

/**
 * A suspended sandbox has no dataplane (its agent is stopped, docs/lifecycle.md):
 * a holder asking where its sandbox is gets it resumed rather than an address
 * nobody listens at. Past its hard TTL it is over, as for a heartbeat.
 */
async function withDataplane(
  core: SessionCore,
  context: AuditContext,
  sandbox: SandboxRecord,
  policy: EffectivePolicy,
  bindingId: string,
): Promise<SandboxRecord> {
  if (sandbox.state !== 'suspended') return sandbox;
  if (sandbox.hardExpiresAt.getTime() <= core.now()) throw sessionExpired(bindingId);
  const resumed = await core.lifecycle.ready(context, sandbox, policy);
  if (resumed === null) throw sessionExpired(bindingId);
  return resumed;
}

function sandboxStartingOrGone(sandbox: SandboxRecord): SbxError {
  return sandbox.state === 'provisioning' ? sandboxStarting() : sessionExpired(sandbox.id);
}
