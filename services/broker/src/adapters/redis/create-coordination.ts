import type { Coordination, CoordinationErrorListener } from './coordination.js';
import { InProcessCoordination } from './in-process-coordination.js';
import { connectRedisCoordination } from './redis-coordination.js';

export interface CreateCoordinationOptions {
  /** When set, coordination goes through this Redis; otherwise it stays in this process. */
  readonly redisUrl?: string | undefined;
  readonly keyPrefix: string;
  /** Clock of the in-process implementation (Redis keeps its own time). */
  readonly now?: () => number;
  /** Redis connect and command bound in ms. */
  readonly redisTimeoutMs?: number;
  readonly onError?: CoordinationErrorListener;
}

/**
 * Redis when a URL is configured, else the single-instance in-process store
 * (whose `warning` the caller should log). Rejects with BACKEND_UNAVAILABLE
 * when the configured Redis cannot be reached.
 */
export async function createCoordination(options: CreateCoordinationOptions): Promise<Coordination> {
  const { redisUrl, keyPrefix, now, redisTimeoutMs, onError } = options;
  if (redisUrl !== undefined && redisUrl !== '') {
    return connectRedisCoordination({ url: redisUrl, keyPrefix, timeoutMs: redisTimeoutMs, onError });
  }
  return new InProcessCoordination({ keyPrefix, now, onError });
}
