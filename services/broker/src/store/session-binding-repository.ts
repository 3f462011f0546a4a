// Session bindings: which actor holds a scope's sandbox. The database, not the
// caller, guarantees one live binding per (tenant, owner, scope, actor): the
// unique index `binding_one_live_per_scope_actor` includes `live`, which is true
// while held and NULL once released, so concurrent creates race safely.
import { SbxError } from '@sbx/protocol';
import type { ActorType, PrismaClient, ScopeType, SessionBinding } from './generated/client.js';
import { guard } from './db-errors.js';
import type { SandboxRecord, TenantScope } from './sandbox-repository.js';

export type { ActorType } from './generated/client.js';
export type SessionBindingRecord = SessionBinding;

export interface NewSessionBinding {
  readonly id: string;
  readonly sandboxId: string;
  readonly tenantId: string;
  readonly ownerId: string;
  readonly scopeType: ScopeType;
  readonly scopeId: string;
  readonly actorType: ActorType;
  readonly actorId: string;
  readonly clientId?: string | null;
  readonly capabilities: readonly string[];
}

export interface BindingKey {
  readonly tenantId: string;
  readonly ownerId: string;
  readonly scopeType: ScopeType;
  readonly scopeId: string;
  readonly actorType: ActorType;
  readonly actorId: string;
}

const CONSTRAINTS = {
  binding_one_live_per_scope_actor: {
    code: 'BINDING_CONFLICT',
    message: 'this actor already holds a live binding on this scope',
  },
  session_bindings_pkey: { code: 'CONFLICT', message: 'a binding with this id already exists' },
  session_bindings_sandbox_id_fkey: { code: 'SANDBOX_NOT_FOUND', message: 'the sandbox does not exist' },
} as const;

export class SessionBindingRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** BINDING_CONFLICT when the actor already holds a live binding on the scope. */
  create(input: NewSessionBinding): Promise<SessionBindingRecord> {
    return guard(
      'create session binding',
      () =>
        this.prisma.sessionBinding.create({
          data: {
            id: input.id,
            sandboxId: input.sandboxId,
            tenantId: input.tenantId,
            ownerId: input.ownerId,
            scopeType: input.scopeType,
            scopeId: input.scopeId,
            actorType: input.actorType,
            actorId: input.actorId,
            clientId: input.clientId ?? null,
            capabilities: [...input.capabilities],
          },
        }),
      CONSTRAINTS,
    );
  }

  /** The binding, only if it belongs to the tenant (and owner, when given); otherwise null. */
  findById(id: string, scope: TenantScope): Promise<SessionBindingRecord | null> {
    return guard('find session binding', () =>
      this.prisma.sessionBinding.findFirst({
        where: {
          id,
          tenantId: scope.tenantId,
          ...(scope.ownerId === undefined ? {} : { ownerId: scope.ownerId }),
        },
      }),
    );
  }

  /** The binding, whoever owns it: callers check ownership (assertOwns), so admins see every tenant. */
  findByIdAnyOwner(id: string): Promise<SessionBindingRecord | null> {
    return guard('find session binding', () => this.prisma.sessionBinding.findUnique({ where: { id } }));
  }

  /** The live binding of an actor on a scope, if any. */
  findLive(key: BindingKey): Promise<SessionBindingRecord | null> {
    const { tenantId, ownerId, scopeType, scopeId, actorType, actorId } = key; // not `...key`: callers pass whole bindings
    return guard('find session binding', () =>
      this.prisma.sessionBinding.findFirst({
        where: { tenantId, ownerId, scopeType, scopeId, actorType, actorId, live: true },
      }),
    );
  }

  /**
   * The scope's live sandbox and, when the actor holds one on it, the actor's live binding,
   * in one read (a negotiation's first question); null when the scope has no live sandbox.
   */
  async findLiveScope(
    key: BindingKey,
  ): Promise<{ sandbox: SandboxRecord; binding: SessionBindingRecord | null } | null> {
    const { tenantId, ownerId, scopeType, scopeId, actorType, actorId } = key;
    const row = await guard('find sandbox', () =>
      this.prisma.sandbox.findFirst({
        where: { tenantId, ownerId, scopeType, scopeId, live: true },
        include: { bindings: { where: { actorType, actorId, live: true } } },
        relationLoadStrategy: 'join',
      }),
    );
    if (row === null) return null;
    const { bindings, ...sandbox } = row;
    return { sandbox, binding: bindings[0] ?? null };
  }

  /** Replaces the capabilities granted to a live binding; false when it is released or unknown. */
  async setCapabilities(id: string, capabilities: readonly string[]): Promise<boolean> {
    const { count } = await guard('update session binding', () =>
      this.prisma.sessionBinding.updateMany({
        where: { id, live: true },
        data: { capabilities: [...capabilities] },
      }),
    );
    return count === 1;
  }

  /** Live bindings on a sandbox, oldest first. */
  listLiveBySandbox(sandboxId: string): Promise<SessionBindingRecord[]> {
    return guard('list session bindings', () =>
      this.prisma.sessionBinding.findMany({
        where: { sandboxId, live: true },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      }),
    );
  }

  /** Records a heartbeat on a live binding; false when it is released or unknown. */
  async touch(id: string, at: Date = new Date()): Promise<boolean> {
    const { count } = await guard('touch session binding', () =>
      this.prisma.sessionBinding.updateMany({ where: { id, live: true }, data: { lastHeartbeatAt: at } }),
    );
    return count === 1;
  }

  /**
   * Releases a binding, which frees its (scope, actor) slot. Idempotent: an
   * already released binding is returned unchanged. BINDING_NOT_FOUND when the
   * binding does not exist (or, with `scope`, belongs to someone else).
   */
  async release(id: string, options: { scope?: TenantScope; at?: Date } = {}): Promise<SessionBindingRecord> {
    const scope = options.scope;
    const where = {
      id,
      ...(scope === undefined ? {} : { tenantId: scope.tenantId }),
      ...(scope?.ownerId === undefined ? {} : { ownerId: scope.ownerId }),
    };
    await guard('release session binding', () =>
      this.prisma.sessionBinding.updateMany({
        where: { ...where, live: true },
        data: { live: null, releasedAt: options.at ?? new Date() },
      }),
    );
    const binding = await guard('find session binding', () =>
      this.prisma.sessionBinding.findFirst({ where }),
    );
    if (binding === null) throw new SbxError('BINDING_NOT_FOUND', `session binding ${id} does not exist`);
    return binding;
  }

  /** Releases every live binding on a sandbox (it terminated); returns how many. */
  async releaseAllForSandbox(sandboxId: string, at: Date = new Date()): Promise<number> {
    const { count } = await guard('release session bindings', () =>
      this.prisma.sessionBinding.updateMany({
        where: { sandboxId, live: true },
        data: { live: null, releasedAt: at },
      }),
    );
    return count;
  }
}
