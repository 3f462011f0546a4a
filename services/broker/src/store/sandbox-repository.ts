// Sandboxes: one live sandbox per (tenant, owner, scope), enforced by the unique
// index `sandbox_one_live_per_scope` over (tenant_id, owner_id, scope_type,
// scope_id, live) — `live` is true while the sandbox serves its scope and NULL
// afterwards, and NULLs never collide. Scope ids are namespaced per owner, so an
// owner can neither see nor squat another owner's thread.
import { SbxError } from '@sbx/protocol';
import type {
  NetworkEnvironment,
  PrismaClient,
  Sandbox,
  SandboxState,
  ScopeType,
} from './generated/client.js';
import { ALLOWED_FROM, assertMoves, enteringState, RUNNING_STATES } from './sandbox-states.js';
import { guard, isRecordNotFound, toSbxError } from './db-errors.js';

export type { NetworkEnvironment, SandboxState, ScopeType } from './generated/client.js';
export type SandboxRecord = Sandbox;
export {
  ALLOWED_FROM,
  assertMoves,
  enteringState,
  FINAL_STATES,
  RUNNING_STATES,
  STATE_STAMPS,
} from './sandbox-states.js';

export interface NewSandbox {
  readonly id: string;
  readonly tenantId: string;
  readonly ownerId: string;
  readonly scopeType: ScopeType;
  readonly scopeId: string;
  readonly provider: string;
  readonly providerRef?: string | null;
  readonly environment?: NetworkEnvironment;
  readonly httpBaseUrl?: string | null;
  readonly wsBaseUrl?: string | null;
  /** AES-256-GCM ciphertext of the sandbox's signing key (iv | tag | data). */
  readonly signingKeyCipher: Uint8Array<ArrayBuffer>;
  readonly leaseExpiresAt: Date;
  readonly hardExpiresAt: Date;
}

export interface TenantScope {
  readonly tenantId: string;
  /** When given, a sandbox of another owner in the same tenant is not found. */
  readonly ownerId?: string;
}

export interface TransitionOptions {
  /**
   * States the sandbox must currently be in; defaults to {@link ALLOWED_FROM}.
   * Narrows it only: a state the protocol does not move to the target is INTERNAL.
   */
  readonly from?: readonly SandboxState[];
  /** The time stamped on `<state>At` (default now). */
  readonly at?: Date;
  readonly failureReason?: string;
  readonly providerRef?: string | null;
  readonly httpBaseUrl?: string | null;
  readonly wsBaseUrl?: string | null;
  readonly workspacePath?: string;
  readonly leaseExpiresAt?: Date;
}

/** The scope a sandbox serves, as its owner names it. */
export interface OwnedScope {
  readonly tenantId: string;
  readonly ownerId: string;
  readonly scopeType: ScopeType;
  readonly scopeId: string;
}

export interface ListLiveOptions {
  readonly tenantId?: string;
  readonly ownerId?: string;
  readonly states?: readonly SandboxState[];
  /** Only sandboxes whose lease ran out before this time (for the reaper). */
  readonly leaseExpiredBefore?: Date;
  readonly limit?: number;
}

const LIVE_CONFLICT = {
  sandbox_one_live_per_scope: { code: 'CONFLICT', message: 'a live sandbox already serves this scope' },
  sandboxes_pkey: { code: 'CONFLICT', message: 'a sandbox with this id already exists' },
} as const;

export class SandboxRepository {
  constructor(
    private readonly prisma: PrismaClient,
    /** Stamped on the sandboxes created here and on every transition that records a new dataplane. */
    private readonly hostInstance?: string,
  ) {}

  /** Records a new sandbox in `provisioning`; CONFLICT when its scope already has a live one. */
  create(input: NewSandbox): Promise<SandboxRecord> {
    return guard(
      'create sandbox',
      () =>
        this.prisma.sandbox.create({
          data: {
            id: input.id,
            tenantId: input.tenantId,
            ownerId: input.ownerId,
            scopeType: input.scopeType,
            scopeId: input.scopeId,
            provider: input.provider,
            providerRef: input.providerRef ?? null,
            hostInstance: this.hostInstance ?? null,
            ...(input.environment === undefined ? {} : { environment: input.environment }),
            httpBaseUrl: input.httpBaseUrl ?? null,
            wsBaseUrl: input.wsBaseUrl ?? null,
            signingKeyCipher: input.signingKeyCipher,
            leaseExpiresAt: input.leaseExpiresAt,
            hardExpiresAt: input.hardExpiresAt,
          },
        }),
      LIVE_CONFLICT,
    );
  }

  /** The sandbox, only if it belongs to the tenant (and owner, when given); otherwise null. */
  findById(id: string, scope: TenantScope): Promise<SandboxRecord | null> {
    return guard('find sandbox', () =>
      this.prisma.sandbox.findFirst({
        where: {
          id,
          tenantId: scope.tenantId,
          ...(scope.ownerId === undefined ? {} : { ownerId: scope.ownerId }),
        },
      }),
    );
  }

  /** The sandbox currently serving an owner's scope, if any. */
  findLiveByScope(scope: OwnedScope): Promise<SandboxRecord | null> {
    const { tenantId, ownerId, scopeType, scopeId } = scope; // not `...scope`: callers pass whole records
    return guard('find sandbox', () =>
      this.prisma.sandbox.findFirst({ where: { tenantId, ownerId, scopeType, scopeId, live: true } }),
    );
  }

  /** The newest sandbox an owner's scope ever had, live or not (its failed one, say); null for none. */
  findLatestByScope(scope: OwnedScope): Promise<SandboxRecord | null> {
    const { tenantId, ownerId, scopeType, scopeId } = scope;
    return guard('find sandbox', () =>
      this.prisma.sandbox.findFirst({
        where: { tenantId, ownerId, scopeType, scopeId },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      }),
    );
  }

  /**
   * How many sandboxes of a tenant have (or are getting) a running agent:
   * provisioning, active or idle. Its quota counts these; a suspended one
   * holds only its workspace and counts again once resumed.
   */
  countRunning(tenantId: string, ownerId?: string): Promise<number> {
    return guard('count sandboxes', () =>
      this.prisma.sandbox.count({
        where: { tenantId, ownerId, live: true, state: { in: [...RUNNING_STATES] } },
      }),
    );
  }

  /**
   * Moves a sandbox to `to` as {@link enteringState} says. Atomic: the update
   * only happens while the sandbox is in one of the `from` states.
   * SANDBOX_NOT_FOUND when it does not exist, CONFLICT when it is in another state.
   */
  async transition(id: string, to: SandboxState, options: TransitionOptions = {}): Promise<SandboxRecord> {
    const from = options.from ?? ALLOWED_FROM[to];
    assertMoves(from, to);
    try {
      return await this.prisma.sandbox.update({
        where: { id, state: { in: [...from] } },
        data: {
          ...enteringState(to, options.at ?? new Date()),
          ...(options.failureReason === undefined ? {} : { failureReason: options.failureReason }),
          ...(options.providerRef === undefined ? {} : { providerRef: options.providerRef }),
          ...(options.httpBaseUrl === undefined
            ? {}
            : { httpBaseUrl: options.httpBaseUrl, hostInstance: this.hostInstance ?? null }),
          ...(options.wsBaseUrl === undefined ? {} : { wsBaseUrl: options.wsBaseUrl }),
          ...(options.workspacePath === undefined ? {} : { workspacePath: options.workspacePath }),
          ...(options.leaseExpiresAt === undefined ? {} : { leaseExpiresAt: options.leaseExpiresAt }),
        },
      });
    } catch (err) {
      if (!isRecordNotFound(err)) throw toSbxError(err, 'transition sandbox');
    }
    const current = await guard('find sandbox', () =>
      this.prisma.sandbox.findUnique({ where: { id }, select: { state: true } }),
    );
    if (current === null) throw new SbxError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
    throw new SbxError('CONFLICT', `sandbox ${id} is ${current.state} and cannot become ${to}`, {
      details: { state: current.state, to },
    });
  }

  /** Extends the lease and records a heartbeat. False when the sandbox is not live. */
  async renewLease(id: string, leaseExpiresAt: Date, at: Date = new Date()): Promise<boolean> {
    const { count } = await guard('renew sandbox lease', () =>
      this.prisma.sandbox.updateMany({
        where: { id, live: true },
        data: { leaseExpiresAt, lastHeartbeatAt: at },
      }),
    );
    return count === 1;
  }

  /** Live sandboxes, oldest first. */
  listLive(options: ListLiveOptions = {}): Promise<SandboxRecord[]> {
    return guard('list sandboxes', () =>
      this.prisma.sandbox.findMany({
        where: {
          live: true,
          ...(options.tenantId === undefined ? {} : { tenantId: options.tenantId }),
          ...(options.ownerId === undefined ? {} : { ownerId: options.ownerId }),
          ...(options.states === undefined ? {} : { state: { in: [...options.states] } }),
          ...(options.leaseExpiredBefore === undefined
            ? {}
            : { leaseExpiresAt: { lt: options.leaseExpiredBefore } }),
        },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
        ...(options.limit === undefined ? {} : { take: options.limit }),
      }),
    );
  }
}
