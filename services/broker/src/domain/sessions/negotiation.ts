// `POST /v1/sandbox/sessions` (MVP and full) and `POST /threads/{id}/sandbox`:
// resolve the actor and its grant, find or create the scope's sandbox, find or
// create the actor's binding on it, and mint a token.
//
// Modes: `ensure` attaches to the scope's sandbox or creates it; `attach_only`
// (MVP `get`) attaches only when the scope already has a sandbox (creating the
// actor's binding if it has none, so a human can join the sandbox an agent
// started) and is 404 BINDING_NOT_FOUND otherwise; `create_only` is 409
// BINDING_CONFLICT when the scope already has one. A scope whose sandbox broke while in
// use is 409 CONFLICT in every mode until its owner deletes that sandbox (failed-scope.ts).
import type { ResolvedClientPolicy } from '../auth/client-policy.js';
import { SbxError, type Actor, type CapabilityScope, type NegotiateRequest } from '@sbx/protocol';
import type {
  NetworkEnvironment,
  OwnedScope,
  SessionBindingRecord,
  SandboxRecord,
} from '../../store/index.js';
import type { AuditContext } from '../audit/audit-trail.js';
import { requireNegotiationScope, resolveActor } from './actor-resolution.js';
import { assertGranted, callerCeiling, grantCapabilities, sameScopes } from './capability-grant.js';
import type { Acquired } from './sandbox-lifecycle.js';
import {
  audited,
  clientPolicy,
  tenantPolicy,
  type MutableAuditSubject,
  type SessionCore,
  type SessionWithToken,
} from './session-core.js';
import { bindingConflict, bindingNotFound, sandboxStarting } from './session-errors.js';
import { assertNotBrokenInUse } from './failed-scope.js';
import { newSessionId } from './session-ids.js';
import { tokenLifetime, type EffectivePolicy } from './session-policy.js';

export interface NegotiationOptions {
  /** Requested token lifetime (thread routes' `ttl`); clamped by policy. */
  readonly ttlSeconds?: number | undefined;
  /** A new sandbox's network (the resource API's `environment`): may narrow the tenant's, never widen it. */
  readonly environment?: NetworkEnvironment | undefined;
}

interface Wanted {
  readonly scope: OwnedScope;
  readonly actor: Actor;
  readonly capabilities: readonly CapabilityScope[];
  readonly clientId: string | null;
  /** What a sandbox this request creates gets from the caller's client: sidecar and environment. */
  readonly client: ResolvedClientPolicy;
  readonly policy: EffectivePolicy;
}

const MAX_ROUNDS = 4;

function withEnvironment(wanted: Wanted, environment: NetworkEnvironment | undefined): Wanted {
  if (environment === undefined || environment === wanted.policy.environment) return wanted;
  if (environment === 'default_public')
    throw new SbxError('FORBIDDEN', 'the tenant is internal-only: its sandboxes have no network');
  return { ...wanted, policy: { ...wanted.policy, environment } };
}

export async function negotiate(
  core: SessionCore,
  context: AuditContext,
  request: NegotiateRequest,
  options: NegotiationOptions = {},
): Promise<SessionWithToken> {
  const subject: MutableAuditSubject = {
    scope: request.scope,
    detail: { mode: request.mode, mvp: request.mvp },
  };
  return audited(core, 'session.negotiate', context, subject, async () => {
    const wanted = withEnvironment(await prepare(core, context, request, subject), options.environment);
    const { sandbox, binding } = await acquire(core, context, wanted, request.mode);
    subject.sessionId = binding.id;
    subject.sandboxId = sandbox.id;
    const ttl = tokenLifetime(
      options.ttlSeconds,
      core.settings.defaultTokenTtlSeconds,
      wanted.policy.maxTokenTtlSeconds,
    );
    const token = await core.tokens.issue(context, sandbox, binding, wanted.capabilities, ttl);
    subject.jti = token.jti;
    return { binding, sandbox, policy: wanted.policy, isolation: core.provider.isolation, token };
  });
}

async function prepare(
  core: SessionCore,
  context: AuditContext,
  request: NegotiateRequest,
  subject: MutableAuditSubject,
): Promise<Wanted> {
  const { principal } = context;
  requireNegotiationScope(principal, request.mode);
  const preference = request.provider_preference;
  if (preference !== 'auto' && preference !== core.provider.name) {
    throw new SbxError(
      'BAD_REQUEST',
      `provider "${preference}" is not available; this broker offers "${core.provider.name}"`,
    );
  }
  const actor = resolveActor(principal, request.actor);
  subject.actor = actor;
  const policy = await tenantPolicy(core, principal.tenantId);
  if (!policy.sandboxEnabled) throw new SbxError('FORBIDDEN', 'sandboxes are disabled for this tenant');
  const client = await clientPolicy(core, principal);
  const actorCeiling = core.settings.actorPolicy[actor.type];
  const requested = request.requested_capabilities ?? actorCeiling;
  const capabilities = grantCapabilities(requested, [
    actorCeiling,
    policy.allowedCapabilities,
    client.maxCapabilities,
    callerCeiling(principal),
  ]);
  assertGranted(capabilities, requested);
  subject.scopes = capabilities;
  return {
    scope: {
      tenantId: principal.tenantId,
      ownerId: principal.ownerId,
      scopeType: request.scope.type,
      scopeId: request.scope.id,
    },
    actor,
    capabilities,
    clientId: client.clientId ?? null,
    client,
    policy,
  };
}

async function acquire(
  core: SessionCore,
  context: AuditContext,
  wanted: Wanted,
  mode: NegotiateRequest['mode'],
): Promise<Acquired> {
  const { sandboxes } = core.repositories;
  const { scope } = wanted;
  const named = `${scope.scopeType} ${scope.scopeId}`;
  // The held check reads the scope too: its read serves the first round.
  const first =
    mode === 'create_only' ? undefined : await core.repositories.bindings.findLiveScope(bindingKey(wanted));
  const held = first === undefined ? null : heldAndActive(first, wanted);
  if (held !== null) return held;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const existing =
      round === 0 && first !== undefined ? (first?.sandbox ?? null) : await sandboxes.findLiveByScope(scope);
    if (existing === null) {
      // Its sandbox broke while in use: never replaced by an empty one unasked (failed-scope.ts).
      await assertNotBrokenInUse(core, scope, named);
      if (mode === 'attach_only') throw bindingNotFound(`${named} has no sandbox session`);
      const created = await core.lifecycle.create(
        context,
        scope,
        creatorBinding(wanted),
        wanted.policy,
        wanted.client,
      );
      if (created !== null) return created;
      continue; // another request created it first: attach to theirs
    }
    if (mode === 'create_only') throw bindingConflict(`${named} already has a sandbox`);
    const ready = await core.lifecycle.ready(context, existing, wanted.policy);
    if (ready === null) continue;
    const binding = await bind(core, ready, wanted);
    if (binding !== null) return { sandbox: ready, binding };
  }
  // Sandboxes kept ending under us: rare enough that "try again" is the honest answer.
  throw sandboxStarting();
}

/** The common case: the actor already holds a live binding, with the grant it asks for, on the scope's sandbox, which is up. */
function heldAndActive(
  found: { sandbox: SandboxRecord; binding: SessionBindingRecord | null } | null,
  wanted: Wanted,
): Acquired | null {
  if (found === null || found.binding === null) return null;
  const { binding, sandbox } = found;
  const current = sandbox.state === 'active';
  return current && sameScopes(binding.capabilities, wanted.capabilities) ? { sandbox, binding } : null;
}

function bindingKey(wanted: Wanted) {
  return { ...wanted.scope, actorType: wanted.actor.type, actorId: wanted.actor.id };
}

function creatorBinding(wanted: Wanted) {
  return {
    id: newSessionId(),
    ...wanted.scope,
    actorType: wanted.actor.type,
    actorId: wanted.actor.id,
    clientId: wanted.clientId,
    capabilities: wanted.capabilities,
  };
}

/** The actor's live binding on `sandbox`, created if needed; null when the sandbox ended meanwhile. */
async function bind(
  core: SessionCore,
  sandbox: SandboxRecord,
  wanted: Wanted,
): Promise<SessionBindingRecord | null> {
  const { bindings, sessionTransactions } = core.repositories;
  const key = bindingKey(wanted);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const live = await bindings.findLive(key);
    if (live !== null && live.sandboxId !== sandbox.id) {
      await bindings.release(live.id); // held on a sandbox that no longer serves the scope
      continue;
    }
    if (live !== null) {
      if (!sameScopes(live.capabilities, wanted.capabilities)) {
        await bindings.setCapabilities(live.id, wanted.capabilities);
      }
      return { ...live, capabilities: [...wanted.capabilities] };
    }
    try {
      return await sessionTransactions.attachBinding({ ...creatorBinding(wanted), sandboxId: sandbox.id });
    } catch (err) {
      if (!(err instanceof SbxError && err.code === 'BINDING_CONFLICT')) throw err;
      // A concurrent request of the same actor bound first: use theirs.
    }
  }
  return null;
}
