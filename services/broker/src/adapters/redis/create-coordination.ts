import type { Logger } from '@sbx/service-kit';
import type { Coordination, CoordinationErrorListener } from './coordination.js';
import { InProcessCoordination } from './in-process-coordination.js';
import { connectRedisCoordination } from './redis-coordination.js';
import { ResilientCoordination } from './resilient-coordination.js';

export interface CreateCoordinationOptions {
  /** When set, coordination goes through this Redis; otherwise it stays in this process. */
  readonly redisUrl?: string | undefined;
  readonly keyPrefix: string;
  /** Clock of the in-process implementation (Redis keeps its own time). */
  readonly now?: () => number;
  /** Redis connect and command bound in ms. */
  readonly redisTimeoutMs?: number;
  readonly onError?: CoordinationErrorListener;
  /** Told when Redis goes away and comes back (the circuit breaker's changes). */
  readonly logger?: Pick<Logger, 'warn' | 'info'>;
  /** Between two probes of an unreachable Redis (default 500 ms). */
  readonly probeIntervalMs?: number;
}

/**
 * Redis when a URL is configured, behind a circuit breaker that serves what can run in this
 * process while Redis is away (resilient-coordination.ts); else the single-instance
 * in-process store (whose `warning` the caller should log). Rejects with
 * BACKEND_UNAVAILABLE when the configured Redis cannot be reached at start.
 */
export async function createCoordination(options: CreateCoordinationOptions): Promise<Coordination> {
  const { redisUrl, keyPrefix, now, redisTimeoutMs, onError, logger, probeIntervalMs } = options;
  if (redisUrl !== undefined && redisUrl !== '') {
    const redis = await connectRedisCoordination({
      url: redisUrl,
      keyPrefix,
      timeoutMs: redisTimeoutMs,
      onError,
    });
    return new ResilientCoordination(redis, { logger, probeIntervalMs, now });
  }
  return new InProcessCoordination({ keyPrefix, now, onError });
}
