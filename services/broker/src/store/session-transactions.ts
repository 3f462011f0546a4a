// The multi-row changes of negotiation that must be atomic. Each locks the
// sandbox row first (FOR SHARE to attach, FOR UPDATE to release), so "attach a
// binding" and "release the last binding and terminate the sandbox" serialize
// per sandbox: an attach never lands on a sandbox that a concurrent release
// just terminated, and a release never terminates a sandbox someone just
// attached to. In READ COMMITTED every statement after the lock sees what the
// other transaction committed.
import type { Prisma, PrismaClient } from './generated/client.js';
import { guard, type ConstraintMapping } from './db-errors.js';
import type { NewSandbox, SandboxRecord } from './sandbox-repository.js';
import type { NewSessionBinding, SessionBindingRecord } from './session-binding-repository.js';

/** Bursts of concurrent negotiations queue for connections (pg) or the single session (PGlite). */
export const TX_OPTIONS = { maxWait: 30_000, timeout: 30_000 } as const;

export const SESSION_CONSTRAINTS: ConstraintMapping = {
  sandbox_one_live_per_scope: { code: 'CONFLICT', message: 'a live sandbox already serves this scope' },
  sandboxes_pkey: { code: 'CONFLICT', message: 'a sandbox with this id already exists' },
  binding_one_live_per_scope_actor: {
    code: 'BINDING_CONFLICT',
    message: 'this actor already holds a live binding on this scope',
  },
  session_bindings_pkey: { code: 'CONFLICT', message: 'a binding with this id already exists' },
};

export interface SandboxWithBinding {
  readonly sandbox: SandboxRecord;
  readonly binding: SessionBindingRecord;
}

export interface ReleaseOutcome {
  readonly binding: SessionBindingRecord;
  /** False when the binding had been released before. */
  readonly releasedNow: boolean;
  /** The sandbox, when this release freed its last binding and terminated it. */
  readonly terminated: SandboxRecord | null;
}

type Tx = Prisma.TransactionClient;

export function bindingData(input: NewSessionBinding): Prisma.SessionBindingUncheckedCreateInput {
  return { ...input, clientId: input.clientId ?? null, capabilities: [...input.capabilities] };
}

async function lockSandbox(tx: Tx, id: string, mode: 'share' | 'update'): Promise<boolean | null> {
  const rows =
    mode === 'share'
      ? await tx.$queryRaw<{ live: boolean | null }[]>`SELECT live FROM sandboxes WHERE id = ${id} FOR SHARE`
      : await tx.$queryRaw<
          { live: boolean | null }[]
        >`SELECT live FROM sandboxes WHERE id = ${id} FOR UPDATE`;
  return rows[0] === undefined ? null : rows[0].live;
}

export class SessionTransactions {
  constructor(
    private readonly prisma: PrismaClient,
    /** Stamped on the sandboxes created here (see RepositoryOptions). */
    private readonly hostInstance?: string,
  ) {}

  /**
   * Records a new `provisioning` sandbox together with its creator's binding.
   * CONFLICT (constraint `sandbox_one_live_per_scope`) when the scope already
   * has a live sandbox: the caller lost the race and should read the winner's.
   */
  createSandboxWithBinding(
    sandbox: NewSandbox,
    binding: Omit<NewSessionBinding, 'sandboxId'>,
  ): Promise<SandboxWithBinding> {
    return guard(
      'create sandbox',
      () =>
        this.prisma.$transaction(async (tx) => {
          const created = await tx.sandbox.create({
            data: { hostInstance: this.hostInstance ?? null, ...sandbox },
          });
          const bound = await tx.sessionBinding.create({
            data: bindingData({ ...binding, sandboxId: created.id }),
          });
          return { sandbox: created, binding: bound };
        }, TX_OPTIONS),
      SESSION_CONSTRAINTS,
    );
  }

  /**
   * Adds a binding to a live sandbox; null when the sandbox is no longer live.
   * BINDING_CONFLICT when the actor already holds a live binding on the scope.
   */
  attachBinding(input: NewSessionBinding): Promise<SessionBindingRecord | null> {
    return guard(
      'attach session binding',
      () =>
        this.prisma.$transaction(async (tx) => {
          if ((await lockSandbox(tx, input.sandboxId, 'share')) !== true) return null;
          return tx.sessionBinding.create({ data: bindingData(input) });
        }, TX_OPTIONS),
      SESSION_CONSTRAINTS,
    );
  }

  /**
   * Releases a binding and, when it was the sandbox's last live one, marks the
   * sandbox terminated (which frees its scope). Null when the binding does not exist.
   */
  releaseBinding(id: string, at: Date = new Date()): Promise<ReleaseOutcome | null> {
    return guard('release session binding', () =>
      this.prisma.$transaction(async (tx) => {
        const before = await tx.sessionBinding.findUnique({ where: { id } });
        if (before === null) return null;
        await lockSandbox(tx, before.sandboxId, 'update');
        const { count } = await tx.sessionBinding.updateMany({
          where: { id, live: true },
          data: { live: null, releasedAt: at },
        });
        const binding = await tx.sessionBinding.findUniqueOrThrow({ where: { id } });
        const terminated = count === 1 ? await terminateIfUnbound(tx, before.sandboxId, at) : null;
        return { binding, releasedNow: count === 1, terminated };
      }, TX_OPTIONS),
    );
  }

  /** Marks a live sandbox failed and releases its bindings; the sandbox, or null when it was not live. */
  failSandbox(id: string, reason: string, at: Date = new Date()): Promise<SandboxRecord | null> {
    return guard('fail sandbox', () =>
      this.prisma.$transaction(async (tx) => {
        if ((await lockSandbox(tx, id, 'update')) !== true) return null;
        await tx.sessionBinding.updateMany({
          where: { sandboxId: id, live: true },
          data: { live: null, releasedAt: at },
        });
        return tx.sandbox.update({
          where: { id },
          data: { state: 'failed', live: null, failedAt: at, failureReason: reason.slice(0, 500) },
        });
      }, TX_OPTIONS),
    );
  }
}

async function terminateIfUnbound(tx: Tx, sandboxId: string, at: Date): Promise<SandboxRecord | null> {
  const remaining = await tx.sessionBinding.count({ where: { sandboxId, live: true } });
  if (remaining > 0) return null;
  const { count } = await tx.sandbox.updateMany({
    where: { id: sandboxId, live: true },
    data: { state: 'terminated', live: null, terminatedAt: at },
  });
  return count === 1 ? tx.sandbox.findUnique({ where: { id: sandboxId } }) : null;
}
