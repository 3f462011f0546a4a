// Which broker instances are alive (docs/lifecycle.md, "Several brokers"). Each
// instance keeps a key in the coordination store, renewed well within its TTL;
// a sandbox whose `host_instance` names an instance without a key was left by
// a broker that died (or was killed), and the reconciler may take it over. With
// in-process coordination only this instance is ever alive, which is right for
// a single broker.
//
// An absent key means "dead" only while the store has kept keys all along. After this
// instance could not renew its own key (the store was unreachable: the others could not
// renew theirs either), or found its own key gone before its TTL (the store restarted
// empty), every instance counts as alive until this one has renewed for a full TTL again:
// by then each live instance has renewed too (every third of the TTL), and a peer is not
// taken for dead, its running sandboxes suspended under it, because Redis blinked.
import type { Logger } from '@sbx/service-kit';
import type { Coordination } from '../../adapters/redis/coordination.js';

export const DEFAULT_PRESENCE_TTL_MS = 15_000;

export interface InstancePresence {
  readonly instanceId: string;
  /** True for this instance, and for another one whose key has not expired. */
  isAlive(instanceId: string): Promise<boolean>;
  /** Publishes the key now and renews it every third of its TTL until `stop`. */
  start(): Promise<void>;
  /** Stops renewing and removes the key: the others may take over at once. */
  stop(): Promise<void>;
}

export interface InstancePresenceOptions {
  readonly coordination: Pick<Coordination, 'set' | 'get' | 'del'> &
    Partial<Pick<Coordination, 'sharedAcrossInstances'>>;
  readonly instanceId: string;
  readonly logger: Logger;
  readonly ttlMs?: number | undefined;
  /** Milliseconds since the epoch (default Date.now). */
  readonly now?: () => number;
}

export const presenceKey = (instanceId: string): string => `broker:instance:${instanceId}`;

export function createInstancePresence(options: InstancePresenceOptions): InstancePresence {
  const { coordination, instanceId, logger } = options;
  const ttlMs = options.ttlMs ?? DEFAULT_PRESENCE_TTL_MS;
  const now = options.now ?? Date.now;
  let timer: NodeJS.Timeout | undefined;
  const own = presenceKey(instanceId);
  // When this instance last renewed its key; undefined before the first time.
  let renewedAt: number | undefined;
  // Absences are believed from this time on (see the top of the file).
  let trustFrom = 0;
  let gap = false;
  const distrust = (why: string): void => {
    if (!gap)
      logger.warn({ ttl_ms: ttlMs }, `${why}: no broker instance counts as gone until renewed for a TTL`);
    gap = true;
  };
  const publish = async (): Promise<void> => {
    const at = now();
    let kept: string | null = own;
    try {
      if (renewedAt !== undefined && coordination.sharedAcrossInstances === true)
        kept = await coordination.get(own);
      await coordination.set(own, String(at), ttlMs);
    } catch (err) {
      if (renewedAt !== undefined) distrust('could not renew this broker instance presence');
      throw err;
    }
    if (kept === null && renewedAt !== undefined && at - renewedAt < ttlMs)
      distrust('the coordination store lost this instance presence before its TTL');
    if (renewedAt !== undefined && at - renewedAt >= ttlMs) gap = true;
    if (gap) trustFrom = at + ttlMs;
    gap = false;
    renewedAt = at;
  };
  return {
    instanceId,
    async isAlive(other) {
      if (other === instanceId) return true;
      if (gap || now() < trustFrom) return true;
      return (await coordination.get(presenceKey(other))) !== null;
    },
    async start() {
      clearInterval(timer);
      await publish();
      logger.info({ instance_id: instanceId, presence_ttl_ms: ttlMs }, 'broker instance present');
      timer = setInterval(
        () => {
          publish().catch((err: unknown) =>
            logger.warn({ err }, 'could not renew this broker instance presence'),
          );
        },
        Math.max(1, Math.floor(ttlMs / 3)),
      );
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await coordination.del(presenceKey(instanceId)).catch((err: unknown) => {
        logger.warn({ err }, 'could not remove this broker instance presence');
      });
    },
  };
}
