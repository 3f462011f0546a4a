// What the broker records when a sandbox's agent ends without being asked to
// (docs/lifecycle.md, "Agent crashes"). A provider that restarts crashed agents (the
// local provider) says what it did: a restart keeps the sandbox as it is, with the
// address the new agent listens at and an audit row; giving up (a crash loop) makes it
// `failed` with its workspace kept, and its scope's next ensure is refused until its
// owner deletes it. A bare exit (a provider that restarts nothing) is failed at once.
// Ends the broker asked for are not reported (the provider marks them expected), and a
// sandbox already suspended or final is left as it is.
import type { Logger } from '@sbx/service-kit';
import type { AgentCrashReport, AgentExitListener } from '../../providers/provider.js';
import type { ReaperRepository } from '../../store/reaper-repository.js';
import { RUNNING_STATES } from '../../store/sandbox-repository.js';
import { stateAuditEvent } from './lifecycle-audit.js';

export interface AgentExitDeps {
  readonly repository: Pick<ReaperRepository, 'applyStateChange' | 'recordAgentRestart'>;
  readonly clock: () => number;
  readonly logger: Logger;
}

export type AgentExitOutcome = 'failed' | 'restarted' | 'ignored';

export interface AgentExitHandler {
  /** For the provider's `onAgentExit`: records the exit in the background, never throws. */
  readonly listener: AgentExitListener;
  /** Marks the sandbox failed unless it is suspended, final or unknown; records a restart. */
  handle(
    sandboxId: string,
    code: number | null,
    signal: NodeJS.Signals | null,
    report?: AgentCrashReport,
  ): Promise<AgentExitOutcome>;
  /** Resolves once every exit passed to `listener` so far is recorded (shutdown, tests). */
  drain(): Promise<void>;
}

export function describeAgentExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal !== null) return `the sandbox agent was killed by ${signal}`;
  return `the sandbox agent exited with code ${code === null ? 'unknown' : String(code)}`;
}

/** The failure reason of a sandbox whose provider gave up restarting its agent. */
export function describeGivenUp(
  code: number | null,
  signal: NodeJS.Signals | null,
  report: Extract<AgentCrashReport, { kind: 'gave_up' }>,
): string {
  const last = describeAgentExit(code, signal).replace('the sandbox agent ', '');
  const times = report.crashes === 1 ? 'once' : `${report.crashes} times`;
  const why =
    report.error === undefined
      ? `its agent crashed ${times} within ${Math.round(report.windowMs / 1000)} s (the last time it ${last})`
      : `its agent ${last} and could not be restarted: ${report.error}`;
  return `${why}; it is not restarted again, and its workspace is kept until the failed retention ends`;
}

export function createAgentExitHandler(deps: AgentExitDeps): AgentExitHandler {
  const pending = new Set<Promise<unknown>>();

  const fail = async (
    sandboxId: string,
    code: number | null,
    signal: NodeJS.Signals | null,
    report: Extract<AgentCrashReport, { kind: 'gave_up' }> | undefined,
  ): Promise<AgentExitOutcome> => {
    const at = new Date(deps.clock());
    const failureReason =
      report === undefined ? describeAgentExit(code, signal) : describeGivenUp(code, signal, report);
    const reason = report === undefined ? 'agent_exit' : 'crash_loop';
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
          reason,
          at,
          actor: 'agent-exit',
          extra: {
            exit_code: code,
            signal,
            released_bindings: releasedBindings,
            failure_reason: failureReason,
            ...(report === undefined ? {} : { crashes: report.crashes }),
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
    deps.logger.warn({ sandbox_id: sandboxId, from: result.from, code, signal }, `sandbox failed: ${reason}`);
    return 'failed';
  };

  const restarted = async (
    sandboxId: string,
    code: number | null,
    signal: NodeJS.Signals | null,
    report: Extract<AgentCrashReport, { kind: 'restarted' }>,
  ): Promise<AgentExitOutcome> => {
    const at = new Date(deps.clock());
    const recorded = await deps.repository.recordAgentRestart(sandboxId, report.dataplane, (sandbox) => ({
      action: 'sandbox.agent_restarted',
      outcome: 'ok',
      at,
      tenantId: sandbox.tenantId,
      callerType: 'system',
      callerId: 'agent-exit',
      scopeType: sandbox.scopeType,
      scopeId: sandbox.scopeId,
      sandboxId,
      detail: { exit_code: code, signal, crashes: report.crashes, state: sandbox.state },
    }));
    deps.logger.info({ sandbox_id: sandboxId, crashes: report.crashes, recorded }, 'sandbox agent restarted');
    return recorded ? 'restarted' : 'ignored';
  };

  const handle: AgentExitHandler['handle'] = async (sandboxId, code, signal, report) => {
    if (report === undefined || report.kind === 'gave_up') return fail(sandboxId, code, signal, report);
    if (report.kind === 'restarted') return restarted(sandboxId, code, signal, report);
    // Restarting: nothing changes yet, the sandbox stays as it is while its agent comes back.
    deps.logger.warn(
      { sandbox_id: sandboxId, code, signal, crashes: report.crashes, delay_ms: report.delayMs },
      'sandbox agent crashed: restarting it on its workspace',
    );
    return 'ignored';
  };

  const listener: AgentExitListener = (sandboxId, code, signal, report) => {
    const recorded = handle(sandboxId, code, signal, report).catch((err: unknown) => {
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
