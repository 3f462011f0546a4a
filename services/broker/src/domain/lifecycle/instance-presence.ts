// Which broker instances are alive (docs/lifecycle.md, "Several brokers"). Each
// instance keeps a key in the coordination store, renewed well within its TTL;
// a sandbox whose `host_instance` names an instance without a key was left by
// a broker that died (or was killed), and the reconciler may take it over. With
// in-process coordination only this instance is ever alive, which is right for
// a single broker.
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
  readonly coordination: Pick<Coordination, 'set' | 'get' | 'del'>;
  readonly instanceId: string;
  readonly logger: Logger;
  readonly ttlMs?: number | undefined;
}

export const presenceKey = (instanceId: string): string => `broker:instance:${instanceId}`;

export function createInstancePresence(options: InstancePresenceOptions): InstancePresence {
  const { coordination, instanceId, logger } = options;
  const ttlMs = options.ttlMs ?? DEFAULT_PRESENCE_TTL_MS;
  let timer: NodeJS.Timeout | undefined;
  const publish = (): Promise<void> => coordination.set(presenceKey(instanceId), String(Date.now()), ttlMs);
  return {
    instanceId,
    async isAlive(other) {
      if (other === instanceId) return true;
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
