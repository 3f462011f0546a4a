import { atLeast, atMost, info, percentile, type Verdict } from '../lib/measure.js';
import {
  closedLoop,
  mergeRuns,
  throughputPerSecond,
  type ClientOp,
  type LoadRun,
} from '../lib/closed-loop.js';
import { request } from '../lib/http-client.js';
import type { BenchWorld } from './bench-world.js';
import { backendCpuSince, snapshotBackends } from './postgres-cpu.js';
import { negotiate, release, sessionOf } from './session-client.js';

const LEVELS = [1, 16, 64] as const;
/** The level the targets apply to. */
const TARGET_CLIENTS = 16;
/** Floor and broker alternate in rounds, so load from elsewhere on the machine hits both alike. */
const ROUNDS = 3;
const TIMING = { warmupMs: 500, durationMs: 3000 };
const THREAD_ID = 'thr_bench_get';
const NS_PER_MS = 1e6;

interface Subject {
  readonly op: ClientOp;
  /** CPU ms the serving process has used so far. */
  readonly cpuMs: () => number;
}

interface Tally {
  readonly runs: LoadRun[];
  processCpuMs: number;
  databaseCpuMs: number;
}

async function round(subject: Subject, clients: number, database: string, tally: Tally): Promise<void> {
  const cpuBefore = subject.cpuMs();
  const backendsBefore = snapshotBackends(database);
  tally.runs.push(await closedLoop(clients, TIMING, subject.op));
  tally.processCpuMs += subject.cpuMs() - cpuBefore;
  tally.databaseCpuMs += backendCpuSince(database, backendsBefore);
}

function summarize(
  label: string,
  tally: Tally,
  target: '(floor)' | '(report)',
): { run: LoadRun; lines: Verdict[] } {
  const run = mergeRuns(tally.runs);
  const perRequestUs = (ms: number): number => (ms * 1000) / run.sent;
  return {
    run,
    lines: [
      info(`${label}: throughput`, throughputPerSecond(run), 'req/s', target),
      info(`${label}: p50`, percentile(run.latenciesNs, 50) / NS_PER_MS, 'ms', target),
      info(`${label}: server CPU per request`, perRequestUs(tally.processCpuMs), 'µs', target),
      info(`${label}: Postgres CPU per request`, perRequestUs(tally.databaseCpuMs), 'µs', target),
    ],
  };
}

async function measureLevel(
  clients: number,
  floor: Subject,
  get: Subject,
  database: string,
): Promise<Verdict[]> {
  const floorTally: Tally = { runs: [], processCpuMs: 0, databaseCpuMs: 0 };
  const getTally: Tally = { runs: [], processCpuMs: 0, databaseCpuMs: 0 };
  for (let r = 0; r < ROUNDS; r++) {
    await round(floor, clients, database, floorTally);
    await round(get, clients, database, getTally);
  }
  const f = summarize(`floor @${clients}`, floorTally, '(floor)');
  const g = summarize(`get @${clients}`, getTally, '(report)');
  const atTarget = clients === TARGET_CLIENTS;
  const getP99 = percentile(g.run.latenciesNs, 99) / NS_PER_MS;
  const ratio = throughputPerSecond(g.run) / throughputPerSecond(f.run);
  const errors = f.run.errors + g.run.errors;
  if (errors > 0) console.error(`   first error @${clients}: ${f.run.firstError ?? g.run.firstError}`);
  return [
    ...f.lines,
    info(`floor @${clients}: p99`, percentile(f.run.latenciesNs, 99) / NS_PER_MS, 'ms', '(floor)'),
    ...g.lines,
    atTarget ? atMost(`get @${clients}: p99`, getP99, 'ms', 5) : info(`get @${clients}: p99`, getP99, 'ms'),
    atTarget
      ? atLeast(`get @${clients}: throughput / floor throughput`, ratio, '×', 0.5)
      : info(`get @${clients}: throughput / floor throughput`, ratio, '×'),
    atMost(`floor and get @${clients}: failed requests`, errors, '', 0),
  ];
}

/**
 * `POST /v1/sandbox/sessions {thread_id, mode:'get'}` of one existing session (ensured
 * once first) at 1, 16 and 64 closed-loop clients, against the floor: the bare Express
 * route doing one primary-key read on the same database. Targets at 16 clients: get p99
 * ≤ 5 ms and get throughput ≥ 0.5× the floor's.
 */
export async function benchSessionGet(world: BenchWorld): Promise<Verdict[]> {
  const { broker, floor, database } = world;
  const session = sessionOf(await negotiate(broker, THREAD_ID, 'ensure'));
  const floorBody = JSON.stringify({ id: database.floorRowId });
  const floorSubject: Subject = {
    cpuMs: () => floor.cpuMs(),
    op: async (agent) => {
      const reply = await request(floor.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: floorBody,
        agent,
      });
      if (reply.status !== 200 || !reply.text.includes(database.floorRowId))
        throw new Error(`floor answered ${reply.status}: ${reply.text.slice(0, 200)}`);
    },
  };
  const getSubject: Subject = {
    cpuMs: () => broker.cpuMs(),
    op: async (agent) => {
      const reply = await negotiate(broker, THREAD_ID, 'get', agent);
      if (!reply.text.includes(session.sessionId)) throw new Error('get answered with another session');
    },
  };
  try {
    const verdicts: Verdict[] = [];
    for (const clients of LEVELS) {
      verdicts.push(...(await measureLevel(clients, floorSubject, getSubject, database.name)));
    }
    return verdicts;
  } finally {
    await release(broker, session.sessionId);
  }
}
