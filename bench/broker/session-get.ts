import { atMost, info, percentile, ratioAtLeast, ratioAtMost, type Verdict } from '../lib/measure.js';
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

/** Concurrent clients; `BENCH_GET_LEVELS=16` measures that level alone (investigations). */
const LEVELS = (process.env['BENCH_GET_LEVELS'] ?? '1,16,64').split(',').map(Number);
/** The level the targets apply to. */
const TARGET_CLIENTS = 16;
const P99_RATIO_TARGET = 2;
const THROUGHPUT_RATIO_TARGET = 0.7;
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
  const p99 = { subject: p99Ms(g.run), floor: p99Ms(f.run), unit: 'ms' };
  const rate = { subject: throughputPerSecond(g.run), floor: throughputPerSecond(f.run), unit: 'req/s' };
  const errors = f.run.errors + g.run.errors;
  if (errors > 0) console.error(`   first error @${clients}: ${f.run.firstError ?? g.run.firstError}`);
  const p99Line = `get @${clients}: p99 / floor p99`;
  const rateLine = `get @${clients}: throughput / floor throughput`;
  return [
    ...f.lines,
    info(`floor @${clients}: p99`, p99.floor, 'ms', '(floor)'),
    ...g.lines,
    info(`get @${clients}: p99`, p99.subject, 'ms'),
    clients === TARGET_CLIENTS
      ? ratioAtMost(p99Line, p99, P99_RATIO_TARGET)
      : info(p99Line, p99.subject / p99.floor, '×'),
    clients === TARGET_CLIENTS
      ? ratioAtLeast(rateLine, rate, THROUGHPUT_RATIO_TARGET)
      : info(rateLine, rate.subject / rate.floor, '×'),
    atMost(`floor and get @${clients}: failed requests`, errors, '', 0),
  ];
}

const p99Ms = (run: LoadRun): number => percentile(run.latenciesNs, 99) / NS_PER_MS;

/** What the floor is asked: the scope and actor of the session `get` finds, read from its rows. */
function floorBodyFor(world: BenchWorld, sessionId: string): string {
  const row = world.database.sql(
    `SELECT tenant_id, owner_id, scope_id, actor_type, actor_id FROM session_bindings WHERE id = '${sessionId}'`,
  );
  const [tenantId, ownerId, threadId, actorType, actorId] = row.split('|');
  if (actorId === undefined) throw new Error(`no binding row for ${sessionId}`);
  return JSON.stringify({
    tenant_id: tenantId,
    owner_id: ownerId,
    thread_id: threadId,
    actor_type: actorType,
    actor_id: actorId,
  });
}

/**
 * `POST /v1/sandbox/sessions {thread_id, mode:'get'}` of one existing session (ensured
 * once first) at 1, 16 and 64 closed-loop clients, against the floor: the bare Express
 * route doing the same durable work on the same database (floor-server.ts: the scope's
 * indexed read and one committed insert of the rows a `get` records). Targets at 16
 * clients: get p99 ≤ 2× the floor's and get throughput ≥ 0.7× the floor's.
 */
export async function benchSessionGet(world: BenchWorld): Promise<Verdict[]> {
  const { broker, floor, database } = world;
  const session = sessionOf(await negotiate(broker, THREAD_ID, 'ensure'));
  const floorBody = floorBodyFor(world, session.sessionId);
  const floorSubject: Subject = {
    cpuMs: () => floor.cpuMs(),
    op: async (agent) => {
      const reply = await request(floor.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: floorBody,
        agent,
      });
      if (reply.status !== 200 || !reply.text.includes(session.sessionId))
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
