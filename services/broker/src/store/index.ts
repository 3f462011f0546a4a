// The store: the only place that touches the database. Everything else uses
// these repositories and never the Prisma client directly.
import type { PrismaClient } from './generated/client.js';
import { ApiKeyRepository } from './api-key-repository.js';
import { AuditRepository } from './audit-repository.js';
import { ExecuteCodeQuotaRepository } from './execute-code-quota-repository.js';
import { IdempotencyRepository } from './idempotency-repository.js';
import { InvocationRepository } from './invocation-repository.js';
import { JournalWriter } from './journal-writer.js';
import { PolicyRepository } from './policy-repository.js';
import { RevocationStore } from './revocation-store.js';
import { SandboxRepository } from './sandbox-repository.js';
import { SessionBindingRepository } from './session-binding-repository.js';
import { SessionTransactions } from './session-transactions.js';
import { TokenIssuanceRepository } from './token-issuance-repository.js';
import { UsageCounterRepository } from './usage-counter-repository.js';
import { WarmPoolRepository } from './warm-pool-repository.js';

export * from './api-key-repository.js';
export * from './audit-repository.js';
export * from './database.js';
export * from './db-errors.js';
export * from './execute-code-quota-repository.js';
export * from './invocation-repository.js';
export * from './idempotency-repository.js';
export * from './journal-writer.js';
export * from './policy-repository.js';
export * from './revocation-store.js';
export * from './sandbox-repository.js';
export * from './session-binding-repository.js';
export * from './session-transactions.js';
export * from './token-issuance-repository.js';
export * from './usage-counter-repository.js';
export * from './warm-pool-repository.js';
export { applyMigrations, diffSql, MIGRATIONS_DIR, SCHEMA_PATH, type DiffSource } from './schema-engine.js';

export interface Repositories {
  readonly sandboxes: SandboxRepository;
  readonly bindings: SessionBindingRepository;
  readonly tokens: TokenIssuanceRepository;
  readonly audit: AuditRepository;
  readonly policies: PolicyRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly sessionTransactions: SessionTransactions;
  readonly idempotency: IdempotencyRepository;
  /** Batched writes of token issuances and audit events (what session calls write). */
  readonly journal: JournalWriter;
  /** Revocation's reads across tenants and a sandbox's key replacement. */
  readonly revocations: RevocationStore;
  /** execute_code: its circuit breakers and its one-row-per-call audit. */
  readonly executeCodeQuota: ExecuteCodeQuotaRepository;
  readonly invocations: InvocationRepository;
  /** The agents' usage counters and their per-day sums (docs/admin.md, "Usage"). */
  readonly usageCounters: UsageCounterRepository;
  readonly warmPool: WarmPoolRepository;
}

export interface RepositoryOptions {
  /**
   * This broker instance: recorded as `host_instance` on the sandboxes it creates and on
   * those whose agent it starts (a new dataplane), for the reconciler (docs/lifecycle.md).
   */
  readonly hostInstance?: string;
}

export function createRepositories(prisma: PrismaClient, options: RepositoryOptions = {}): Repositories {
  return {
    sandboxes: new SandboxRepository(prisma, options.hostInstance),
    bindings: new SessionBindingRepository(prisma),
    tokens: new TokenIssuanceRepository(prisma),
    audit: new AuditRepository(prisma),
    policies: new PolicyRepository(prisma),
    apiKeys: new ApiKeyRepository(prisma),
    sessionTransactions: new SessionTransactions(prisma, options.hostInstance),
    idempotency: new IdempotencyRepository(prisma),
    journal: new JournalWriter(prisma),
    revocations: new RevocationStore(prisma),
    executeCodeQuota: new ExecuteCodeQuotaRepository(prisma),
    invocations: new InvocationRepository(prisma),
    usageCounters: new UsageCounterRepository(prisma),
    warmPool: new WarmPoolRepository(prisma),
  };
}
