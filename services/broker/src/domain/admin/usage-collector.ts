// The usage collector (docs/admin.md, "Usage"): every `intervalMs` it asks the agent of
// each running sandbox for its counters and records what they grew by, per tenant and
// UTC day. The reaper's suspends and terminations collect the sandbox first
// (`beforeEnding`), and so does the broker's own stop; other ends (explicit release,
// admin actions, a crash) lose what the agent counted since the last round.
import type { Logger } from '@sbx/service-kit';
import type { AgentReport, SandboxProvider } from '../../providers/provider.js';
import type { RunningSandbox, UsageCounterRepository } from '../../store/usage-counter-repository.js';
import { forEachLimited } from '../lifecycle/for-each-limited.js';

export const DEFAULT_USAGE_COLLECT_INTERVAL_MS = 60_000;
/** Agents asked at once: each may take the inspect timeout (~2 s) to answer. */
const CONCURRENCY = 8;

export interface UsageCollectorDeps {
  readonly repository: Pick<UsageCounterRepository, 'runningSandboxes' | 'tenantOf' | 'record'>;
  readonly provider: Pick<SandboxProvider, 'inspect'>;
  readonly clock: () => number;
  readonly logger: Logger;
  /** Between rounds of the loop; default 60 s. */
  readonly intervalMs?: number | undefined;
}

export interface UsageCollection {
  /** Sandboxes whose agent answered and whose counters were recorded. */
  readonly recorded: number;
  /** Running sandboxes whose agent did not answer (or whose recording failed). */
  readonly missed: number;
}

export interface UsageCollector {
  /** Rounds every `intervalMs` until `stop()`. Idempotent. */
  start(): void;
  /** Ends the loop after a last round when it was started (the broker is stopping). */
  stop(): Promise<void>;
  /** One round over every running sandbox; joins the round under way. */
  collectOnce(): Promise<UsageCollection>;
  /** Records one sandbox now; false when its agent did not answer. Never throws. */
  collectSandbox(sandboxId: string, tenantId?: string): Promise<boolean>;
  /** The provider's `stop` and `destroy`, each collecting the sandbox before its agent ends. */
  beforeEnding<P extends Pick<SandboxProvider, 'stop' | 'destroy'>>(provider: P): Pick<P, 'stop' | 'destroy'>;
}

const countersOf = (report: AgentReport) => ({
  bootId: report.bootId,
  commandsRun: report.usage.commands_run,
  fileBytesIn: report.usage.file_bytes_in,
  fileBytesOut: report.usage.file_bytes_out,
});

export function createUsageCollector(deps: UsageCollectorDeps): UsageCollector {
  const { repository, provider, logger } = deps;
  const intervalMs = deps.intervalMs ?? DEFAULT_USAGE_COLLECT_INTERVAL_MS;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let inFlight: Promise<UsageCollection> | undefined;

  const collectSandbox = async (sandboxId: string, knownTenant?: string): Promise<boolean> => {
    try {
      const report = await provider.inspect(sandboxId);
      if (report === undefined) return false;
      const tenantId = knownTenant ?? (await repository.tenantOf(sandboxId));
      if (tenantId === undefined) return false;
      await repository.record(sandboxId, tenantId, countersOf(report), new Date(deps.clock()));
      return true;
    } catch (err) {
      logger.warn({ err, sandbox_id: sandboxId }, 'agent usage counters not recorded');
      return false;
    }
  };

  const round = async (): Promise<UsageCollection> => {
    const sandboxes: RunningSandbox[] = await repository.runningSandboxes();
    let recorded = 0;
    await forEachLimited(sandboxes, CONCURRENCY, async (sandbox) => {
      if (await collectSandbox(sandbox.id, sandbox.tenantId)) recorded += 1;
    });
    return { recorded, missed: sandboxes.length - recorded };
  };

  const collectOnce = (): Promise<UsageCollection> => {
    inFlight ??= round().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  const tick = (): void => {
    timer = setTimeout(() => {
      collectOnce()
        .catch((err: unknown) => logger.warn({ err }, 'usage collection failed; retrying next interval'))
        .finally(() => {
          if (running) tick();
        });
    }, intervalMs);
    timer.unref();
  };

  return {
    start() {
      if (running) return;
      running = true;
      tick();
    },
    async stop() {
      if (!running) return;
      running = false;
      clearTimeout(timer);
      await collectOnce().catch((err: unknown) => logger.warn({ err }, 'last usage collection failed'));
    },
    collectOnce,
    collectSandbox,
    beforeEnding: (target) => ({
      stop: async (sandboxId) => {
        await collectSandbox(sandboxId);
        return target.stop(sandboxId);
      },
      destroy: async (sandboxId) => {
        await collectSandbox(sandboxId);
        return target.destroy(sandboxId);
      },
    }),
  };
}
