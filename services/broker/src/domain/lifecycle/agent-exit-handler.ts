// A sandbox whose agent died on its own is `failed`, so nobody is handed a
// token for a dead data plane and its scope can get a new sandbox. Ends the
// broker asked for are not reported by the provider (it marks them expected),
// and a sandbox already suspended or final is left as it is.
import type { Logger } from '@sbx/service-kit';
import type { AgentExitListener } from '../../providers/provider.js';
import type { ReaperRepository } from '../../store/reaper-repository.js';
import { RUNNING_STATES } from '../../store/sandbox-repository.js';
import { stateAuditEvent } from './lifecycle-audit.js';

export interface AgentExitDeps {
  readonly repository: Pick<ReaperRepository, 'applyStateChange'>;
  readonly clock: () => number;
  readonly logger: Logger;
}

export type AgentExitOutcome = 'failed' | 'ignored';

export interface AgentExitHandler {
  /** For the provider's `onAgentExit`: records the exit in the background, never throws. */
  readonly listener: AgentExitListener;
  /** Marks the sandbox failed unless it is suspended, final or unknown. */
  handle(sandboxId: string, code: number | null, signal: NodeJS.Signals | null): Promise<AgentExitOutcome>;
  /** Resolves once every exit passed to `listener` so far is recorded (shutdown, tests). */
  drain(): Promise<void>;
}

export function describeAgentExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal !== null) return `the sandbox agent was killed by ${signal}`;
  return `the sandbox agent exited with code ${code === null ? 'unknown' : String(code)}`;
}

export function createAgentExitHandler(deps: AgentExitDeps): AgentExitHandler {
  const pending = new Set<Promise<unknown>>();

  const handle = async (
    sandboxId: string,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): Promise<AgentExitOutcome> => {
    const at = new Date(deps.clock());
    const failureReason = describeAgentExit(code, signal);
    const result = await deps.repository.applyStateChange({
      sandboxId,
      to: 'failed',
      // An agent is (or is coming) up in these states, so its exit is a crash.
      due: { states: RUNNING_STATES },
      at,
      failureReason,
      audit: (from, sandbox, releasedBindings) =>
        stateAuditEvent({
          sandbox,
          from,
          to: 'failed',
          reason: 'agent_exit',
          at,
          actor: 'agent-exit',
          extra: {
            exit_code: code,
            signal,
            released_bindings: releasedBindings,
            failure_reason: failureReason,
          },
        }),
    });
    if (!result.applied) {
      deps.logger.debug(
        { sandbox_id: sandboxId, state: result.state },
        'agent exit left the sandbox as it was',
      );
      return 'ignored';
    }
    deps.logger.warn(
      { sandbox_id: sandboxId, from: result.from, code, signal },
      'sandbox failed: its agent exited',
    );
    return 'failed';
  };

  const listener: AgentExitListener = (sandboxId, code, signal) => {
    const recorded = handle(sandboxId, code, signal).catch((err: unknown) => {
      deps.logger.error({ err, sandbox_id: sandboxId }, 'could not record an agent exit');
    });
    pending.add(recorded);
    void recorded.finally(() => pending.delete(recorded));
  };

  return {
    listener,
    handle,
    async drain() {
      await Promise.all(pending);
    },
  };
}
