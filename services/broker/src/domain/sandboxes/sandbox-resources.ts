// Sandboxes as resources (docs/sandboxes.md): the same store, lifecycle and providers as
// the session routes, addressed by sandbox id. Owner scoping as everywhere: another
// owner's sandbox is a 404, an admin:sandbox caller sees every tenant.
import { randomUUID } from 'node:crypto';
import {
  SbxError,
  TEMPLATES,
  type CapabilityScope,
  type CreateSandboxRequest,
  type SandboxListQuery,
  type SandboxPage,
  type SandboxResource,
  type UpdateSandboxRequest,
} from '@sbx/protocol';
import type { CapabilityClaims } from '@sbx/tokens';
import type { Sandbox } from '../../store/generated/client.js';
import type { OwnerScope, SandboxResourceQueries } from '../../store/sandbox-resource-queries.js';
import { decodePosition, encodePosition } from '../admin/admin-cursor.js';
import { toStoredEnvironment } from '../admin/policy-presenter.js';
import { forceMove, type SandboxActionDeps } from '../admin/sandbox-actions.js';
import { TERMINATE, type ForcedMove } from '../admin/state-deadlines.js';
import type { AuditContext } from '../audit/audit-trail.js';
import { isAdmin, type Principal } from '../auth/principal.js';
import type { SessionService } from '../sessions/session-service.js';
import { OWNER_STOP_REASON } from './owner-stops.js';
import { RelayResume, type RunningDataplane } from './relay-resume.js';
import { toSandboxResource } from './sandbox-presenter.js';
import { RelayTokens, type RelaySubject, type RelayTokenDeps } from './relay-tokens.js';
import { RunningTargets } from './running-targets.js';

export interface SandboxResourcesDeps {
  readonly queries: SandboxResourceQueries;
  readonly sessions: SessionService;
  readonly actions: SandboxActionDeps;
  readonly tokens: RelayTokenDeps;
  /** A relayed call is use: the sandbox's lease is extended as a heartbeat would. */
  readonly renewLease: (sandbox: Sandbox) => Promise<void>;
  /** Whether the sandbox's latest suspension was its owner's stop (owner-stops.ts). */
  readonly stoppedByOwner: (sandboxId: string) => Promise<boolean>;
}

/** Where one relayed call goes, with the token minted for it. */
export interface RelayTarget {
  readonly sandbox: Sandbox;
  readonly httpBaseUrl: string;
  readonly wsBaseUrl: string;
  readonly token: string;
  readonly jti: string;
  /** The address was remembered (running-targets.ts), not read just now. */
  readonly remembered?: boolean;
  /** The token was kept from an earlier call (relay-tokens.ts), not minted for this one. */
  readonly kept?: boolean;
}

const STOP: ForcedMove = {
  to: 'suspended',
  provider: 'stop',
  order: 'provider-first',
  afterProvider: ['idle', 'active'],
  reason: OWNER_STOP_REASON,
};
// A failed sandbox too: deleting it is how its owner starts its scope over (failed-scope.ts).
const DELETE: ForcedMove = {
  ...TERMINATE,
  afterProvider: [...(TERMINATE.afterProvider ?? []), 'failed'],
  reason: 'user_delete',
};

function ownerScope(principal: Principal, tenantFilter?: string): OwnerScope {
  if (isAdmin(principal)) return { tenantId: tenantFilter };
  return { tenantId: principal.tenantId, ownerId: principal.ownerId };
}

const notFound = (id: string) =>
  new SbxError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`, { details: { sandbox_id: id } });

export class SandboxResources {
  readonly #tokens: RelayTokens;
  readonly #resume: RelayResume;
  readonly #running: RunningTargets;

  constructor(private readonly deps: SandboxResourcesDeps) {
    this.#tokens = new RelayTokens(deps.tokens);
    this.#running = new RunningTargets(deps.tokens.now);
    this.#resume = new RelayResume({
      sessions: deps.sessions,
      stoppedByOwner: deps.stoppedByOwner,
      logger: deps.actions.logger,
    });
  }

  async list(principal: Principal, query: SandboxListQuery): Promise<SandboxPage> {
    if (query.tenant_id !== undefined && !isAdmin(principal))
      throw new SbxError('FORBIDDEN', 'tenant_id is a filter for admin:sandbox callers only');
    const page = await this.deps.queries.list(
      ownerScope(principal, query.tenant_id),
      { state: query.state, scopeType: query.scope_type, threadId: query.thread_id, name: query.name },
      { after: decodePosition('sandboxes', query.cursor), limit: query.limit },
    );
    return { items: page.items.map(toSandboxResource), next_cursor: encodePosition('sandboxes', page.next) };
  }

  async get(principal: Principal, id: string): Promise<SandboxResource> {
    return toSandboxResource(await this.find(principal, id));
  }

  async find(principal: Principal, id: string): Promise<Sandbox> {
    const sandbox = await this.deps.queries.find(ownerScope(principal), id);
    if (sandbox === null) throw notFound(id);
    return sandbox;
  }

  async create(context: AuditContext, body: CreateSandboxRequest): Promise<SandboxResource> {
    if (!(TEMPLATES as readonly string[]).includes(body.template))
      throw new SbxError(
        'BAD_REQUEST',
        `unknown template "${body.template}"; this broker offers: ${TEMPLATES.join(', ')}`,
      );
    const scope =
      body.thread_id === undefined
        ? { type: 'workspace' as const, id: `sbx-${randomUUID()}` }
        : { type: 'thread' as const, id: body.thread_id };
    const session = await this.deps.sessions.negotiate(
      context,
      { scope, mode: 'create_only', provider_preference: 'auto', mvp: false },
      { environment: body.environment === undefined ? undefined : toStoredEnvironment(body.environment) },
    );
    const row = await this.deps.queries.update(session.sandbox.id, {
      name: body.name ?? null,
      template: body.template,
      metadata: body.metadata,
    });
    return toSandboxResource(row);
  }

  async update(principal: Principal, id: string, body: UpdateSandboxRequest): Promise<SandboxResource> {
    const sandbox = await this.find(principal, id);
    return toSandboxResource(await this.deps.queries.update(sandbox.id, body));
  }

  /** Resumes a suspended sandbox with its workspace; a running one answers as it is. */
  async start(context: AuditContext, id: string): Promise<SandboxResource> {
    const sandbox = await this.find(context.principal, id);
    if (sandbox.state === 'terminated' || sandbox.state === 'failed')
      throw new SbxError('CONFLICT', `sandbox ${id} is ${sandbox.state}; create a new one`);
    if (sandbox.ownerId !== context.principal.ownerId || sandbox.tenantId !== context.principal.tenantId)
      throw new SbxError('FORBIDDEN', "only the sandbox's owner can start it");
    await this.deps.sessions.negotiate(context, {
      scope: { type: sandbox.scopeType, id: sandbox.scopeId },
      mode: 'attach_only',
      provider_preference: 'auto',
      mvp: false,
    });
    this.#running.forget(id);
    return this.get(context.principal, id);
  }

  async stop(context: AuditContext, id: string): Promise<SandboxResource> {
    const sandbox = await this.find(context.principal, id);
    if (sandbox.state === 'suspended') return toSandboxResource(sandbox);
    if (sandbox.state !== 'active' && sandbox.state !== 'idle')
      throw new SbxError(
        'CONFLICT',
        `sandbox ${id} is ${sandbox.state}; only a running sandbox can be stopped`,
      );
    await forceMove(this.deps.actions, sandbox, STOP, context);
    this.#running.forget(id);
    return this.get(context.principal, id);
  }

  /** Idempotent: a sandbox already terminated answers as deleted. */
  async delete(context: AuditContext, id: string): Promise<void> {
    const sandbox = await this.find(context.principal, id);
    if (sandbox.state === 'terminated') return;
    await forceMove(this.deps.actions, sandbox, DELETE, context);
    this.#running.forget(id);
  }

  /**
   * A running sandbox's agent and a token with `capability` for one relayed call. A sandbox
   * the lifecycle suspended is resumed first (423 while it starts); one its owner stopped is 409.
   */
  async relayTarget(
    context: AuditContext,
    id: string,
    capability: CapabilityScope,
    options: { readonly remembered?: boolean } = {},
  ): Promise<RelayTarget> {
    const who = JSON.stringify(ownerScope(context.principal));
    const remembered = options.remembered === true ? this.#running.get(who, id) : undefined;
    const running = remembered ?? (await this.#runningNow(context, id));
    if (remembered === undefined) this.#running.set(who, running);
    const token = await this.#tokens.get(
      running.sandbox,
      relaySubject(context.principal),
      capability,
      context.requestId,
    );
    return { ...running, ...token, remembered: remembered !== undefined };
  }

  /** The agent answered 401 to this relay token: the caller's next call gets a new one. */
  retireRelayToken(jti: string): void {
    this.#tokens.retire(jti);
  }

  async #runningNow(context: AuditContext, id: string): Promise<RunningDataplane> {
    const running = await this.#resume.running(context, await this.find(context.principal, id));
    await this.deps.renewLease(running.sandbox);
    return running;
  }

  /** The running sandbox a verified capability token's call goes to, resumed as for `relayTarget`. */
  tokenTarget(sandbox: Sandbox, claims: CapabilityClaims, requestId: string): Promise<RunningDataplane> {
    return this.#resume.running({ requestId, principal: tokenHolder(sandbox, claims) }, sandbox);
  }
}

/** Audited as whoever holds the token (its subject), as token exchange audits it. */
function tokenHolder(sandbox: Sandbox, claims: CapabilityClaims): Principal {
  return {
    tenantId: sandbox.tenantId,
    id: claims.sub,
    type: claims.act === undefined ? 'user' : 'agent',
    ownerId: sandbox.ownerId,
    scopes: new Set(),
    via: 'capability_token',
    jti: claims.jti,
  };
}

/**
 * A delegated agent's calls run as the user it acts for, with the agent named in `act`
 * (RFC 8693), so the sandbox's command log says who ran what for whom.
 */
function relaySubject(principal: Principal): RelaySubject {
  return principal.actingFor === undefined
    ? { sub: principal.id }
    : { sub: principal.actingFor, actor: principal.actor ?? principal.id };
}
