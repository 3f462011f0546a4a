// This instance's warm pool (docs/warm-pools.md), when WARM_POOL_SIZE asks for one and
// the provider can hand a warm sandbox to its claimant: sandboxes of the default
// template on the default-public network, with the limits of a tenant without a
// policy of its own (a tenant with other limits or internal-only gets cold starts).
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from './adapters/redis/coordination.js';
import { acquireLeasedLock } from './domain/lifecycle/leased-lock.js';
import { sandboxLockKey } from './domain/lifecycle/sandbox-lock.js';
import type { KeyVault } from './domain/keys/key-vault.js';
import { createWarmPool, WARM_TENANT, type WarmPool } from './domain/pools/warm-pool.js';
import { limitsOf } from './domain/sessions/session-policy.js';
import type { SandboxProvider } from './providers/provider.js';
import type { Repositories } from './store/index.js';
import type { WarmPoolRepository } from './store/warm-pool-repository.js';

/**
 * What one idle local sandbox costs the host, MiB of PSS (its agent, namespace holder and
 * slirp4netns), for the banner's estimate: 25.2 measured on the embedded default pool of two
 * (docs/warm-pools.md "Memory"); ~35 while freshly started, until V8 shrinks the idle heap.
 */
export const IDLE_LOCAL_SANDBOX_MIB = 25;

export interface WarmPoolSetup {
  readonly size: number | undefined;
  readonly provider: SandboxProvider;
  readonly repositories: Pick<Repositories, 'warmPool' | 'policies'>;
  readonly vault: KeyVault;
  readonly hostInstance: string;
  readonly tokenIssuer: string;
  readonly logger: Logger;
  /** Where sandbox locks are taken (the reconcilers of every instance take them too). */
  readonly coordination?: Pick<Coordination, 'acquireLock'>;
}

/** A sandbox's leased lock, as the reconciler takes it. */
function lockIn(coordination: Pick<Coordination, 'acquireLock'>) {
  return (sandboxId: string) => acquireLeasedLock(coordination, sandboxLockKey(sandboxId));
}

export async function openWarmPool(
  setup: WarmPoolSetup,
): Promise<
  { readonly pool: WarmPool; readonly repository: WarmPoolRepository; readonly size: number } | undefined
> {
  const { size, provider, logger } = setup;
  if (size === undefined || size === 0) return undefined;
  if (provider.claim === undefined) {
    logger.warn({ provider: provider.name }, 'WARM_POOL_SIZE is ignored: this provider keeps no warm pools');
    return undefined;
  }
  // No tenant has this id: the store's built-in policy, which every tenant without a row gets.
  const defaults = await setup.repositories.policies.getTenantPolicy(WARM_TENANT);
  const pool = createWarmPool({
    repository: setup.repositories.warmPool,
    provider,
    vault: setup.vault,
    kind: {
      hostInstance: setup.hostInstance,
      provider: provider.name,
      template: 'default',
      environment: 'default_public',
    },
    size,
    limits: limitsOf(defaults),
    tokenIssuer: setup.tokenIssuer,
    logger,
    ...(setup.coordination === undefined ? {} : { lock: lockIn(setup.coordination) }),
  });
  return { pool: announcingReady(pool, setup, size), repository: setup.repositories.warmPool, size };
}

/**
 * The pool, logging `warm pool ready` once its first fill leaves it full: from then on a
 * new scope's ensure is served warm (operators and tests wait for this line).
 */
function announcingReady(pool: WarmPool, setup: WarmPoolSetup, size: number): WarmPool {
  const announce = async (): Promise<void> => {
    await pool.refill();
    const ready = await setup.repositories.warmPool.count(pool.kind);
    if (ready >= size) setup.logger.info({ ready }, 'warm pool ready');
  };
  return {
    kind: pool.kind,
    limits: pool.limits,
    refill: () => pool.refill(),
    refillSoon: () => pool.refillSoon(),
    stop: () => pool.stop(),
    start() {
      pool.start();
      // start() began the first fill; refill() joins it. Its failures are logged by the pool.
      void announce().catch(() => undefined);
    },
  };
}
