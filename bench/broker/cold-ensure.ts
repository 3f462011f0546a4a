import { randomBytes } from 'node:crypto';
import { atMost, info, percentile, type Verdict } from '../lib/measure.js';
import { countedLoop } from '../lib/closed-loop.js';
import type { BenchWorld } from './bench-world.js';
import type { BrokerProcess } from './broker-process.js';
import { processesOf, waitUntilNoneOf } from './sandbox-processes.js';
import { negotiate, release, sessionOf, type OpenedSession } from './session-client.js';

/**
 * [clients, sandboxes created]: every ensure starts a real agent, so each level is capped
 * (64 agents at once is what 2 vCPUs and the provider's 15 s start timeout allow).
 */
const LEVELS: ReadonlyArray<readonly [number, number]> = [
  [1, 20],
  [16, 64],
  [64, 64],
];
const TARGET_CLIENTS = 1;
const RELEASE_CONCURRENCY = 8;
/** Releasing ends each agent (SIGTERM, up to 5 s grace) before the next level starts. */
const SETTLE_TIMEOUT_MS = 60_000;
const NS_PER_MS = 1e6;

async function releaseSessions(broker: BrokerProcess, sessions: readonly OpenedSession[]): Promise<void> {
  const queue = [...sessions];
  const worker = async (): Promise<void> => {
    for (let next = queue.pop(); next !== undefined; next = queue.pop())
      await release(broker, next.sessionId);
  };
  await Promise.all(Array.from({ length: RELEASE_CONCURRENCY }, worker));
  await waitUntilNoneOf(broker.dataDir, SETTLE_TIMEOUT_MS);
}

/**
 * Median time the provider took (audit `sandbox.provisioning` → `sandbox.active`, written
 * just before the provider is called and just after the row turned active): the rest of
 * an ensure is the broker's own work.
 */
function providerP50Ms(world: BenchWorld, threadPrefix: string): number {
  return Number(
    world.database.sql(
      `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM a.at - p.at) * 1000)
         FROM audit_events p JOIN audit_events a ON a.sandbox_id = p.sandbox_id AND a.action = 'sandbox.active'
        WHERE p.action = 'sandbox.provisioning' AND p.scope_id LIKE '${threadPrefix}%'`,
    ),
  );
}

async function measureLevel(world: BenchWorld, clients: number, total: number): Promise<Verdict[]> {
  const { broker } = world;
  const threadPrefix = `thr_cold_${randomBytes(4).toString('hex')}_`;
  const sessions: OpenedSession[] = [];
  const cpuBefore = broker.cpuMs();
  const run = await countedLoop(clients, total, async (index, agent) => {
    sessions.push(sessionOf(await negotiate(broker, `${threadPrefix}${index}`, 'ensure', agent)));
  });
  const brokerCpuMs = broker.cpuMs() - cpuBefore;
  const agents = processesOf(broker.dataDir).length;
  await releaseSessions(broker, sessions);
  if (run.errors > 0) console.error(`   first error @${clients}: ${run.firstError}`);
  const p50 = percentile(run.latenciesNs, 50) / NS_PER_MS;
  const label = `cold ensure @${clients} (${total} new)`;
  return [
    clients === TARGET_CLIENTS ? atMost(`${label}: p50`, p50, 'ms', 300) : info(`${label}: p50`, p50, 'ms'),
    info(`${label}: p99`, percentile(run.latenciesNs, 99) / NS_PER_MS, 'ms'),
    info(`${label}: provider start p50 (audit)`, providerP50Ms(world, threadPrefix), 'ms'),
    info(`${label}: throughput`, (run.latenciesNs.length * 1e9) / run.wallNs, 'sbx/s'),
    info(`${label}: broker CPU per sandbox`, brokerCpuMs / total, 'ms'),
    info(`${label}: sandbox processes running at the end`, agents, ''),
    atMost(`${label}: failed`, run.errors, '', 0),
  ];
}

/**
 * `POST /v1/sandbox/sessions {thread_id, mode:'ensure'}` with a new thread id each time:
 * a cold sandbox through the local provider (database rows, a fresh key, a real agent
 * started and health-checked). One creation first warms the broker's code paths; every
 * level releases its sessions and waits for the agents to be gone before the next.
 * Target: p50 ≤ 300 ms at 1 client.
 */
export async function benchColdEnsure(world: BenchWorld): Promise<Verdict[]> {
  const { broker } = world;
  const warmup = sessionOf(await negotiate(broker, 'thr_cold_warmup', 'ensure'));
  await releaseSessions(broker, [warmup]);
  const verdicts: Verdict[] = [];
  for (const [clients, total] of LEVELS) verdicts.push(...(await measureLevel(world, clients, total)));
  return verdicts;
}
