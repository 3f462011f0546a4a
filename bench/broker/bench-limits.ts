/**
 * The sandbox limits of the bench's tenant, and a broker with a warm pool of the same limits.
 *
 * Only the workspace image differs from the defaults: 128 MiB instead of 10 GiB. The local
 * provider's disk budget promises every image in full and keeps 5 % of the filesystem free
 * (docs/security.md, "Resource limits"). On this machine's 252 GB disk with ~78 GB free, 10 GiB
 * images leave room for about six live sandboxes, and the suites hold 20 to 200 at once.
 * Making an image costs the same at either size (mkfs.ext4 of a sparse 128 MiB or 10 GiB file:
 * 23 and 24 ms here).
 */
import { putTenantPolicy } from '../execute_code/tool-client.js';
import { WARM_TENANT } from '../../services/broker/src/domain/pools/warm-pool.js';
import {
  BOOTSTRAP_TENANT_ID,
  startBrokerProcess,
  type BrokerOptions,
  type BrokerProcess,
} from './broker-process.js';

export const BENCH_SANDBOX_LIMITS = { max_disk_mb: 128 } as const;

export interface BenchBrokerOptions extends BrokerOptions {
  /** WARM_POOL_SIZE; 0 (the default) keeps no pool. */
  readonly poolSize?: number;
  /** The default tenant's `max_sandboxes` (the default policy allows 10). */
  readonly maxSandboxes: number;
}

/**
 * A broker whose default tenant has the bench's limits and room for `maxSandboxes`, set
 * through the admin API as an operator would. A warm sandbox is claimed only by a tenant whose
 * limits equal the pool's. The pool reads its limits once, when it opens, from the policy of
 * its own tenant id (`WARM_TENANT`). So for a pool, a first broker without one sets that
 * policy, and the broker returned is started on the same database.
 */
export async function startBenchBroker(options: BenchBrokerOptions): Promise<BrokerProcess> {
  const poolSize = options.poolSize ?? 0;
  const env = (size: number) => ({ ...options.env, WARM_POOL_SIZE: String(size) });
  if (poolSize > 0) {
    const first = await startBrokerProcess({ ...options, env: env(0) });
    try {
      await putTenantPolicy(first.url, first.apiKey, WARM_TENANT, BENCH_SANDBOX_LIMITS);
    } finally {
      await first.stop();
    }
  }
  const broker = await startBrokerProcess({ ...options, env: env(poolSize) });
  try {
    await putTenantPolicy(broker.url, broker.apiKey, BOOTSTRAP_TENANT_ID, {
      ...BENCH_SANDBOX_LIMITS,
      max_sandboxes: options.maxSandboxes,
    });
    return broker;
  } catch (err) {
    await broker.stop();
    throw err;
  }
}
