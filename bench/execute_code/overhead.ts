/**
 * The overhead of the execute_code tool path over a bare agent call running the same code:
 * `POST /v1/execute_code` to the broker (caller check, policy, quota, the thread's sandbox and
 * a token, the agent's `POST /v1/code`, the invocation row) against `POST {agent}/v1/code`
 * straight to the same sandbox's agent with a capability token negotiated once. For context,
 * `POST {agent}/v1/exec {cmd}` of the same snippet; to say where the difference goes, stages
 * of the tool path done by the client (subjects.ts), CPU of the broker and of its Postgres
 * backends per call, and the database's own counters per call.
 */
import { keepAliveAgent } from '../lib/http-client.js';
import { info, percentile, ratioAtMost, type Verdict } from '../lib/measure.js';
import type { ExecuteCodeWorld } from './bench-world.js';
import { activityPerCall, type DatabaseActivity } from './database-activity.js';
import { alternateRounds, type Tally } from './rounds.js';
import { threadSubjects, type SubjectName } from './subjects.js';
import type { Language } from './tool-client.js';

/** 25 rounds of 10: 250 timed calls per subject; each of the 5 goes first in every fifth round. */
const PLAN = { warmupCalls: 20, rounds: 25, callsPerRound: 10 };
/** Calls per subject for the database's counters (after the rounds). */
const ACTIVITY_CALLS = 50;
const TARGET_RATIO = 1.3;
const MS = 1e6;

const p = (tally: Tally, q: number): number => percentile(tally.latenciesNs, q) / MS;
const compared = (t: Record<SubjectName, Tally>, q: number) => ({
  subject: p(t.tool, q),
  floor: p(t.code, q),
  unit: 'ms',
});

function latencyLines(language: Language, t: Record<SubjectName, Tally>): Verdict[] {
  const at = (metric: string): string => `${language}: ${metric}`;
  return [
    info(at('floor POST {agent}/v1/code p50'), p(t.code, 50), 'ms', '(floor)'),
    info(at('floor POST {agent}/v1/code p99'), p(t.code, 99), 'ms', '(floor)'),
    info(at('context POST {agent}/v1/exec {cmd} p50'), p(t.exec, 50), 'ms', '(floor)'),
    info(at('context POST {agent}/v1/exec {cmd} p99'), p(t.exec, 99), 'ms', '(floor)'),
    info(at('tool POST /v1/execute_code p50'), p(t.tool, 50), 'ms'),
    info(at('tool POST /v1/execute_code p99'), p(t.tool, 99), 'ms'),
    ratioAtMost(at('tool / floor /v1/code p50'), compared(t, 50), TARGET_RATIO),
    ratioAtMost(at('tool / floor /v1/code p99'), compared(t, 99), TARGET_RATIO),
    info(at('tool / context /v1/exec p50'), p(t.tool, 50) / p(t.exec, 50), '×'),
    info(at('tool − floor p50'), p(t.tool, 50) - p(t.code, 50), 'ms'),
  ];
}

function stageLines(language: Language, t: Record<SubjectName, Tally>): Verdict[] {
  const at = (metric: string): string => `${language}: ${metric}`;
  const perCallUs = (ms: number, tally: Tally): number => (ms * 1000) / tally.latenciesNs.length;
  const both = t['negotiate+code'];
  return [
    info(at('stage POST /threads/{t}/sandbox p50'), p(t.negotiate, 50), 'ms'),
    info(at('stage POST /threads/{t}/sandbox p99'), p(t.negotiate, 99), 'ms'),
    info(at('stage negotiate + /v1/code p50'), p(both, 50), 'ms'),
    info(at('stage negotiate + /v1/code p99'), p(both, 99), 'ms'),
    info(at('tool − (negotiate + /v1/code) p50'), p(t.tool, 50) - p(both, 50), 'ms'),
    info(at('agent run duration_ms p50: floor'), percentile(t.code.agentMs, 50), 'ms'),
    info(at('agent run duration_ms p50: tool'), percentile(t.tool.agentMs, 50), 'ms'),
    info(at('agent run duration_ms p50: negotiate + code'), percentile(both.agentMs, 50), 'ms'),
    info(at('broker CPU per tool call'), perCallUs(t.tool.brokerCpuMs, t.tool), 'µs'),
    info(at('broker CPU per negotiation'), perCallUs(t.negotiate.brokerCpuMs, t.negotiate), 'µs'),
    info(at('Postgres CPU per tool call'), perCallUs(t.tool.postgresCpuMs, t.tool), 'µs'),
    info(at('Postgres CPU per negotiation'), perCallUs(t.negotiate.postgresCpuMs, t.negotiate), 'µs'),
  ];
}

function activityLines(language: Language, subject: string, a: DatabaseActivity): Verdict[] {
  const at = (metric: string): string => `${language}: ${subject}: ${metric}`;
  return [
    info(at('commits per call'), a.commits, ''),
    info(at('rows inserted + updated per call'), a.inserted + a.updated, ''),
  ];
}

/** The tool path, its floors and its stages on one new thread, in alternating rounds. */
export function benchOverhead(language: Language): (world: ExecuteCodeWorld) => Promise<Verdict[]> {
  return async (world) => {
    const { subjects, release } = await threadSubjects(world, language);
    try {
      const cpu = { brokerCpuMs: () => world.broker.cpuMs(), database: world.database.name };
      const tallies = await alternateRounds(subjects, PLAN, cpu);
      const t = Object.fromEntries(tallies) as Record<SubjectName, Tally>;
      const connection = keepAliveAgent();
      const calls = (name: SubjectName) => () => subjects.find((s) => s.name === name)!.op(connection);
      const activity = await activityPerCall(world.database, ACTIVITY_CALLS, {
        tool: calls('tool'),
        negotiation: calls('negotiate'),
      }).finally(() => connection.destroy());
      return [
        ...latencyLines(language, t),
        ...stageLines(language, t),
        ...activityLines(language, 'tool', activity.tool),
        ...activityLines(language, 'negotiation', activity.negotiation),
      ];
    } finally {
      await release();
    }
  };
}
