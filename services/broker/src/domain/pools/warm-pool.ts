// A warm pool (docs/warm-pools.md): `size` sandboxes of the default template made ahead
// by this broker instance, so an ensure on a new scope claims one instead of waiting for
// a cold start. The pool refills in the background after each claim and every
// `refillIntervalMs`. Warm sandboxes are this instance's alone (a local agent lives and
// dies with the broker that started it); on shutdown they are destroyed.
import type { Logger } from '@sbx/service-kit';
import { SigningKey } from '@sbx/tokens';
import type { SandboxProvider } from '../../providers/provider.js';
import type { SandboxLimits } from '../../providers/sandbox-limits.js';
import type { WarmKind, WarmPoolRepository } from '../../store/warm-pool-repository.js';
import type { KeyVault } from '../keys/key-vault.js';
import { newSandboxId } from '../sessions/session-ids.js';

export const WARM_TENANT = 'sbx-warm-pool';

export interface WarmPoolDeps {
  readonly repository: Pick<WarmPoolRepository, 'add' | 'count' | 'listAll' | 'remove'>;
  readonly provider: SandboxProvider;
  readonly vault: Pick<KeyVault, 'sealSigningKey' | 'forget'>;
  readonly kind: WarmKind;
  readonly size: number;
  /** What every warm sandbox is made with: a claim must want exactly these. */
  readonly limits: SandboxLimits;
  readonly tokenIssuer: string;
  readonly logger: Logger;
  /** Sandboxes made at once while refilling (default 4). */
  readonly concurrency?: number;
  /** Between two refills besides those after claims (default 30 s). */
  readonly refillIntervalMs?: number;
  /**
   * A claim asks for a refill this long after the last claim (default 250 ms), at most
   * `refillMaxDelayMs` (default 2 s) after the first unanswered one: starting agents takes
   * the CPU a burst of claims needs, so the refill waits for the burst to pass.
   */
  readonly refillDelayMs?: number;
  readonly refillMaxDelayMs?: number;
  /**
   * The sandbox's lock, held from before it is made until its row is written: a warm
   * sandbox has no row while it is made, and the reconciler of every broker on the provider
   * destroys what has none unless it can take this lock (orphan-sweep.ts). Without it the
   * reconcilers destroyed sandboxes being made, whose rows were written all the same, and
   * ensures claimed them: sandboxes without an agent (reliability/load/ensure-race.test.ts).
   * Null: held elsewhere, which a new id never is.
   */
  readonly lock?: (sandboxId: string) => Promise<{ release(): Promise<unknown> } | null>;
}

export interface WarmPool {
  readonly kind: WarmKind;
  readonly limits: SandboxLimits;
  start(): void;
  /** Makes sandboxes until the pool is full; joins the refill under way. */
  refill(): Promise<void>;
  /** A refill once claims pause (see `refillDelayMs`). */
  refillSoon(): void;
  /** Stops refilling and destroys this instance's warm sandboxes. */
  stop(): Promise<void>;
}

export function createWarmPool(deps: WarmPoolDeps): WarmPool {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const makeOne = async (): Promise<void> => {
    const id = newSandboxId();
    // Coordination unreachable: made without the lock, as before there was one.
    const lock = await deps.lock?.(id).catch(() => null);
    try {
      await makeWarm(id);
    } finally {
      await lock?.release().catch(() => false);
    }
  };

  const makeWarm = async (id: string): Promise<void> => {
    const key = SigningKey.generate();
    const network = deps.kind.environment === 'internal_only' ? 'off' : 'on';
    const up = await deps.provider.create({
      sandboxId: id,
      tenantId: WARM_TENANT,
      signingKey: key,
      tokenIssuer: deps.tokenIssuer,
      network,
      limits: deps.limits,
      template: deps.kind.template,
    });
    try {
      await deps.repository.add({
        ...deps.kind,
        id,
        providerRef: up.providerRef,
        httpBaseUrl: up.dataplane.httpBaseUrl,
        wsBaseUrl: up.dataplane.wsBaseUrl,
        workspacePath: up.dataplane.workspacePath,
        signingKeyCipher: deps.vault.sealSigningKey(id, key),
      });
    } catch (err) {
      deps.vault.forget(id);
      await deps.provider.destroy(id).catch(() => undefined);
      throw err;
    }
  };

  const fill = async (): Promise<void> => {
    const concurrency = deps.concurrency ?? 4;
    for (;;) {
      if (stopped) return;
      const missing = deps.size - (await deps.repository.count(deps.kind));
      if (missing <= 0) return;
      const batch = Array.from({ length: Math.min(missing, concurrency) }, () => makeOne());
      const failed = (await Promise.allSettled(batch)).filter((result) => result.status === 'rejected');
      if (failed.length > 0) {
        // The next refill tries again; a provider that fails now would fail in a loop.
        deps.logger.warn({ err: failed[0]?.reason, failed: failed.length }, 'could not refill the warm pool');
        return;
      }
    }
  };

  const refill = (): Promise<void> => {
    running ??= fill().finally(() => {
      running = undefined;
    });
    return running;
  };

  let soon: NodeJS.Timeout | undefined;
  let firstAsked: number | undefined;
  const refillSoon = (): void => {
    const now = Date.now();
    firstAsked ??= now;
    const maxDelay = deps.refillMaxDelayMs ?? 2000;
    const delay = Math.max(0, Math.min(deps.refillDelayMs ?? 250, firstAsked + maxDelay - now));
    clearTimeout(soon);
    soon = setTimeout(() => {
      firstAsked = undefined;
      void refill().catch((err: unknown) => deps.logger.warn({ err }, 'warm pool refill failed'));
    }, delay);
    soon.unref();
  };

  return {
    kind: deps.kind,
    limits: deps.limits,
    refillSoon,
    start() {
      if (timer !== undefined) return;
      void refill().catch((err: unknown) => deps.logger.warn({ err }, 'warm pool refill failed'));
      timer = setInterval(() => {
        void refill().catch((err: unknown) => deps.logger.warn({ err }, 'warm pool refill failed'));
      }, deps.refillIntervalMs ?? 30_000);
      timer.unref();
    },
    refill,
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(soon);
      await running?.catch(() => undefined);
      const mine = (await deps.repository.listAll(deps.kind.provider)).filter(
        (row) => row.hostInstance === deps.kind.hostInstance,
      );
      await Promise.all(
        mine.map(async (row) => {
          if (await deps.repository.remove(row.id))
            await deps.provider.destroy(row.id).catch(() => undefined);
        }),
      );
    },
  };
}
