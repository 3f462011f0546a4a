// A deployment for a load test file (fault-kit.ts's useDeployment: broker processes on a
// Postgres and a Redis of the suite's own): the local provider under bubblewrap, a warm
// pool per replica, the brokers' inspector open for heap readings, and the tenants'
// policies written before the first broker starts (load-kit.ts, prepareTenants).
import { beforeAll } from '@jest/globals';
import { SETUP_MS, useDeployment, type Deployment } from '../broker-faults/fault-kit.js';
import { INSPECT_ENV } from './inspector.js';
import { prepareTenants } from './load-kit.js';

export interface LoadDeploymentOptions {
  readonly replicas: number;
  /** WARM_POOL_SIZE of each replica. */
  readonly warmPool: number;
  /** More environment of every replica. */
  readonly env?: Record<string, string>;
}

export function useLoadDeployment(options: LoadDeploymentOptions): () => Deployment {
  const deployment = useDeployment({
    redis: true,
    replicas: 0,
    env: { WARM_POOL_SIZE: String(options.warmPool), ...INSPECT_ENV, ...options.env },
  });
  beforeAll(async () => {
    const d = deployment();
    await prepareTenants(d.db);
    await Promise.all(Array.from({ length: options.replicas }, () => d.start()));
  }, SETUP_MS);
  return deployment;
}
