// Warm pools' sandboxes (docs/warm-pools.md). A claim takes the oldest warm sandbox of
// this instance's kind with SKIP LOCKED, so concurrent claims never take the same one
// and never wait on each other, and records it in `sandboxes` with its creator's
// binding in the same statement (warm-claim-statement.ts): a claim that loses its scope
// to a concurrent create changes nothing and the warm sandbox stays in the pool.
import type { NetworkEnvironment, PrismaClient, WarmSandbox } from './generated/client.js';
import { guard } from './db-errors.js';
import type { NewSandbox } from './sandbox-repository.js';
import type { NewSessionBinding } from './session-binding-repository.js';
import { SESSION_CONSTRAINTS, type SandboxWithBinding } from './session-transactions.js';
import { claimRows, claimStatement } from './warm-claim-statement.js';

export type WarmSandboxRecord = WarmSandbox;
export type NewWarmSandbox = Omit<WarmSandbox, 'createdAt'>;

/** Which warm sandboxes a claim may take: this instance's, of one kind. */
export interface WarmKind {
  readonly hostInstance: string;
  readonly provider: string;
  readonly template: string;
  readonly environment: NetworkEnvironment;
}

/**
 * What the claimed sandbox's row gets besides what its warm row had; `activeAt` is the
 * claim's time on the caller's clock, the one its lease times come from.
 */
export type ClaimedSandbox = Omit<
  NewSandbox,
  'id' | 'provider' | 'providerRef' | 'environment' | 'httpBaseUrl' | 'wsBaseUrl' | 'signingKeyCipher'
> & { readonly activeAt: Date };

/** The running-sandbox limits a claim must leave room in (the tenant's policy). */
export interface ClaimRoom {
  readonly maxSandboxes: number;
  /** null (or at least `maxSandboxes`): the owner may use all of the tenant's. */
  readonly maxSandboxesPerOwner: number | null;
}

export class WarmPoolRepository {
  constructor(private readonly prisma: PrismaClient) {}

  add(row: NewWarmSandbox): Promise<WarmSandboxRecord> {
    return guard('add a warm sandbox', () => this.prisma.warmSandbox.create({ data: row }));
  }

  count(kind: WarmKind): Promise<number> {
    return guard('count warm sandboxes', () => this.prisma.warmSandbox.count({ where: { ...kind } }));
  }

  /** Every warm sandbox of this provider (the reconciler's view), oldest first. */
  listAll(provider: string): Promise<WarmSandboxRecord[]> {
    return guard('list warm sandboxes', () =>
      this.prisma.warmSandbox.findMany({ where: { provider }, orderBy: { createdAt: 'asc' } }),
    );
  }

  /** False when it was claimed or removed meanwhile. */
  async remove(id: string): Promise<boolean> {
    const { count } = await guard('remove a warm sandbox', () =>
      this.prisma.warmSandbox.deleteMany({ where: { id } }),
    );
    return count === 1;
  }

  /**
   * Takes a warm sandbox of `kind` into `sandbox`'s scope as `active`, with its creator's
   * binding; null when none is left or the tenant has no room for one more running
   * sandbox. CONFLICT when the scope got a live sandbox meanwhile (the warm sandbox then
   * stays in the pool).
   */
  claim(
    kind: WarmKind,
    sandbox: ClaimedSandbox,
    binding: Omit<NewSessionBinding, 'sandboxId'>,
    room: ClaimRoom,
  ): Promise<(SandboxWithBinding & { readonly warm: WarmSandboxRecord }) | null> {
    return guard(
      'claim a warm sandbox',
      async () => {
        const rows = await this.prisma.$queryRaw<Record<string, unknown>[]>(
          claimStatement(kind, sandbox, binding, room),
        );
        return rows[0] === undefined ? null : claimRows(rows[0]);
      },
      SESSION_CONSTRAINTS,
    );
  }
}
