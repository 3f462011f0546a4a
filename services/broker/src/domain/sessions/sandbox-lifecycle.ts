// Bringing a scope's sandbox up and down.
//
// Creation under concurrency: the sandbox row is inserted in `provisioning`
// (with its creator's binding) before the provider is called. The unique index
// `sandbox_one_live_per_scope` picks the single winner among any number of
// requests on any number of broker instances; losers read the winner's row and
// wait for it to become active (polling the database, which every instance
// shares), answering 423 SANDBOX_STARTING with Retry-After past a short bound.
// The provider is called outside any transaction. A provider failure marks the
// sandbox `failed`, which frees the scope for a later attempt, and answers 503.
// Provider work (create, resume, destroy) happens under the sandbox's
// coordination lock, which the lease reaper also takes.
import type { ResolvedClientPolicy } from '../auth/client-policy.js';
import type { SidecarTokenMinter } from '../tokens/sidecar-tokens.js';
import { clientParts } from './sandbox-client-parts.js';
import { claimWarm, type WarmClaimDeps } from '../pools/warm-claim.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import { SigningKey } from '@sbx/tokens';
import type { SandboxProvider } from '../../providers/provider.js';
import type {
  NewSessionBinding,
  OwnedScope,
  SandboxRecord,
  SandboxRepository,
  SessionBindingRecord,
  SessionTransactions,
} from '../../store/index.js';
import { outcomeOf, type AuditContext, type AuditTrail } from '../audit/audit-trail.js';
import type { KeyVault } from '../keys/key-vault.js';
import type { BrokerMetrics } from '../metrics/broker-metrics.js';
import { auditSandbox } from './sandbox-audit.js';
import type { SandboxLocks } from './sandbox-locks.js';
import { assertRoomForAgent } from './sandbox-quota.js';
import { resumeSandbox } from './sandbox-resume.js';
import { providerFailure, sandboxStarting, sessionExpired } from './session-errors.js';
import { newSandboxId } from './session-ids.js';
import type { EffectivePolicy } from './session-policy.js';

export interface SandboxLifecycleDeps {
  readonly sandboxes: SandboxRepository;
  readonly transactions: SessionTransactions;
  readonly provider: SandboxProvider;
  readonly vault: KeyVault;
  readonly audit: AuditTrail;
  readonly locks: SandboxLocks;
  readonly logger: Logger;
  readonly tokenIssuer: string;
  /** How long a request waits for someone else's sandbox to finish provisioning. */
  readonly provisioningWaitMs: number;
  readonly now: () => number;
  /** Told how long each provider `create` took. */
  readonly metrics?: Pick<BrokerMetrics, 'provisioned'> | undefined;
  /** Signs the pod-scoped JWT of a client's credential sidecar; absent: sidecars are not asked for. */
  readonly sidecarTokens?: SidecarTokenMinter | undefined;
  /** This instance's warm pool; absent: every sandbox starts cold. */
  readonly warm?: WarmClaimDeps | undefined;
}

export type CreatorBinding = Omit<NewSessionBinding, 'sandboxId'>;

/** The tenant's policy and, when a client made the request, its client policy. */
type CreationPolicy = EffectivePolicy & { readonly client?: ResolvedClientPolicy | undefined };

export interface Acquired {
  readonly sandbox: SandboxRecord;
  readonly binding: SessionBindingRecord;
}

export class SandboxLifecycle {
  constructor(private readonly deps: SandboxLifecycleDeps) {}

  /** Creates the scope's sandbox with its creator's binding; null when another request won the race. */
  async create(
    context: AuditContext,
    scope: OwnedScope,
    binding: CreatorBinding,
    policy: EffectivePolicy,
    client?: ResolvedClientPolicy,
  ): Promise<Acquired | null> {
    if (this.deps.warm !== undefined) {
      const claimed = await claimWarm(this.deps.warm, { context, scope, binding, policy, client });
      if (claimed === 'scope-taken') return null;
      if (claimed !== 'none') return claimed;
    }
    // A claim checks the limits in its own statement; a cold start reads them first.
    await assertRoomForAgent(this.deps.sandboxes, policy, scope);
    const id = newSandboxId();
    // A fresh id: the lock is free; holding it keeps the reaper away while the provider works.
    const run = await this.deps.locks.run(id, 0, () =>
      this.#create(context, id, scope, binding, { ...policy, client }),
    );
    return run.ran ? run.value : null;
  }

  /**
   * The sandbox once it can serve: waits out someone else's provisioning,
   * resumes an idle or suspended one. Null when it terminated meanwhile; 503
   * when its provisioning failed; 423 when it is still starting after the wait.
   */
  async ready(
    context: AuditContext,
    sandbox: SandboxRecord,
    policy: EffectivePolicy,
  ): Promise<SandboxRecord | null> {
    const deadline = this.deps.now() + this.deps.provisioningWaitMs;
    let current: SandboxRecord | null = sandbox;
    for (let pause = 25; current !== null; pause = Math.min(pause * 2, 250)) {
      switch (current.state) {
        case 'active':
          return current;
        case 'terminated':
          return null;
        case 'failed':
          throw providerFailure(new SbxError('PROVIDER_UNAVAILABLE', 'the sandbox failed to start'));
        case 'idle':
        case 'suspended':
          current = await resumeSandbox(this.deps, context, current, policy, deadline);
          break;
        case 'provisioning':
          if (this.deps.now() >= deadline) throw sandboxStarting();
          await sleep(pause);
          current = await this.deps.sandboxes.findById(current.id, { tenantId: current.tenantId });
          break;
      }
    }
    return null;
  }

  /** Ends a terminated sandbox at its provider; failures are logged and audited, not thrown. */
  async destroy(context: AuditContext, sandbox: SandboxRecord): Promise<void> {
    const waitMs = this.deps.provisioningWaitMs;
    const run = await this.deps.locks.run(sandbox.id, waitMs, () => this.#destroy(context, sandbox));
    // Still held (the reaper is stopping or destroying it): destroy is idempotent, so go ahead.
    if (!run.ran) await this.#destroy(context, sandbox);
  }

  async #destroy(context: AuditContext, sandbox: SandboxRecord): Promise<void> {
    this.deps.vault.forget(sandbox.id);
    try {
      await this.deps.provider.destroy(sandbox.id);
      await auditSandbox(this.deps.audit, 'sandbox.destroy', 'ok', context, sandbox);
    } catch (err) {
      this.deps.logger.error(
        { err, sandboxId: sandbox.id },
        'provider could not destroy a terminated sandbox',
      );
      await auditSandbox(this.deps.audit, 'sandbox.destroy', outcomeOf(err), context, sandbox);
    }
  }

  async #create(
    context: AuditContext,
    id: string,
    scope: OwnedScope,
    binding: CreatorBinding,
    policy: CreationPolicy,
  ): Promise<Acquired | null> {
    const { vault, provider, transactions, now } = this.deps;
    const key = SigningKey.generate();
    const at = now();
    let created: Acquired;
    try {
      created = await transactions.createSandboxWithBinding(
        {
          id,
          tenantId: scope.tenantId,
          ownerId: scope.ownerId,
          scopeType: scope.scopeType,
          scopeId: scope.scopeId,
          provider: provider.name,
          environment: policy.environment,
          signingKeyCipher: vault.sealSigningKey(id, key),
          leaseExpiresAt: new Date(at + policy.idleTimeoutSeconds * 1000),
          hardExpiresAt: new Date(at + policy.hardTtlSeconds * 1000),
        },
        binding,
      );
    } catch (err) {
      vault.forget(id);
      if (isScopeTaken(err)) return null;
      throw err;
    }
    await auditSandbox(this.deps.audit, 'sandbox.provisioning', 'ok', context, created.sandbox);
    return { sandbox: await this.#bringUp(context, created.sandbox, key, policy), binding: created.binding };
  }

  async #bringUp(
    context: AuditContext,
    sandbox: SandboxRecord,
    key: SigningKey,
    policy: CreationPolicy,
  ): Promise<SandboxRecord> {
    let up;
    const started = this.deps.now();
    const took = () => (this.deps.now() - started) / 1000;
    try {
      up = await this.deps.provider.create({
        sandboxId: sandbox.id,
        tenantId: sandbox.tenantId,
        signingKey: key,
        tokenIssuer: this.deps.tokenIssuer,
        network: policy.environment === 'internal_only' ? 'off' : 'on',
        limits: policy.limits,
        ...clientParts(this.deps.sidecarTokens, sandbox, policy.client),
      });
    } catch (err) {
      this.deps.metrics?.provisioned('failed', took());
      await this.#fail(context, sandbox, err);
      throw providerFailure(err);
    }
    this.deps.metrics?.provisioned('ok', took());
    try {
      const active = await this.deps.sandboxes.transition(sandbox.id, 'active', {
        from: ['provisioning'],
        providerRef: up.providerRef,
        httpBaseUrl: up.dataplane.httpBaseUrl,
        wsBaseUrl: up.dataplane.wsBaseUrl,
        workspacePath: up.dataplane.workspacePath,
      });
      await auditSandbox(this.deps.audit, 'sandbox.active', 'ok', context, active);
      return active;
    } catch (err) {
      // Released, or failed by the reaper's provisioning timeout, while the provider worked.
      await this.#destroy(context, sandbox);
      if (err instanceof SbxError && err.code === 'CONFLICT') throw sessionExpired(sandbox.id);
      throw err;
    }
  }

  async #fail(context: AuditContext, sandbox: SandboxRecord, err: unknown): Promise<void> {
    const reason = err instanceof SbxError ? `${err.code}: ${err.message}` : 'provider error';
    this.deps.vault.forget(sandbox.id);
    this.deps.logger.warn({ err, sandboxId: sandbox.id }, 'sandbox failed to start');
    await this.deps.transactions.failSandbox(sandbox.id, reason, new Date(this.deps.now()));
    await auditSandbox(this.deps.audit, 'sandbox.failed', outcomeOf(err), context, sandbox);
  }
}

function isScopeTaken(err: unknown): boolean {
  return (
    err instanceof SbxError &&
    err.code === 'CONFLICT' &&
    err.details?.['constraint'] === 'sandbox_one_live_per_scope'
  );
}
