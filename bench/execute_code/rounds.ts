/**
 * Subjects measured in alternating rounds: every round runs each subject for a few calls,
 * in an order that rotates from round to round, so drift (a busier machine, a warmer cache,
 * a flush someone else caused) reaches every subject alike. Each subject has its own
 * kept-alive connection. Per round, the CPU the broker process and the database's Postgres
 * backends used is charged to the subject of that round.
 */
import type { Agent } from 'node:http';
import { keepAliveAgent } from '../lib/http-client.js';
import { backendCpuSince, snapshotBackends } from '../broker/postgres-cpu.js';

export interface Subject {
  readonly name: string;
  /** One call; answers the run time the agent reported (ms), when there is one. */
  readonly op: (agent: Agent) => Promise<number | undefined>;
}

export interface Tally {
  readonly latenciesNs: number[];
  /** `duration_ms` the agent reported for each call's run. */
  readonly agentMs: number[];
  brokerCpuMs: number;
  postgresCpuMs: number;
}

export interface RoundPlan {
  readonly warmupCalls: number;
  readonly rounds: number;
  readonly callsPerRound: number;
}

export interface CpuSources {
  /** CPU ms the broker process has used so far. */
  readonly brokerCpuMs: () => number;
  /** The database whose Postgres backends are counted. */
  readonly database: string;
}

/** Runs every subject `rounds × callsPerRound` times after its warm-up; tallies by subject name. */
export async function alternateRounds(
  subjects: readonly Subject[],
  plan: RoundPlan,
  cpu: CpuSources,
): Promise<Map<string, Tally>> {
  const agents = new Map(subjects.map((s) => [s.name, keepAliveAgent()]));
  const tallies = new Map<string, Tally>(
    subjects.map((s) => [s.name, { latenciesNs: [], agentMs: [], brokerCpuMs: 0, postgresCpuMs: 0 }]),
  );
  const agentOf = (subject: Subject): Agent => agents.get(subject.name) ?? keepAliveAgent();
  try {
    for (const subject of subjects)
      for (let i = 0; i < plan.warmupCalls; i++) await subject.op(agentOf(subject));
    for (let round = 0; round < plan.rounds; round++) {
      const first = round % subjects.length;
      const order = [...subjects.slice(first), ...subjects.slice(0, first)];
      for (const subject of order) {
        const tally = tallies.get(subject.name)!;
        const brokerBefore = cpu.brokerCpuMs();
        const backendsBefore = snapshotBackends(cpu.database);
        for (let i = 0; i < plan.callsPerRound; i++) {
          const started = process.hrtime.bigint();
          const agentMs = await subject.op(agentOf(subject));
          tally.latenciesNs.push(Number(process.hrtime.bigint() - started));
          if (agentMs !== undefined) tally.agentMs.push(agentMs);
        }
        tally.brokerCpuMs += cpu.brokerCpuMs() - brokerBefore;
        tally.postgresCpuMs += backendCpuSince(cpu.database, backendsBefore);
      }
    }
  } finally {
    for (const agent of agents.values()) agent.destroy();
  }
  return tallies;
}
