import { spawn } from 'node:child_process';
import { atMost, durationNs, info, percentile, type Verdict } from '../lib/measure.js';
import { keepAliveAgent, request } from '../lib/http-client.js';
import { startAgentProcess } from './agent-process.js';
import { startFloorServer } from './floor-process.js';

const WARMUP = 30;
/** Floor and subject alternate in rounds, so load from elsewhere on the machine hits both alike. */
const ROUNDS = 30;
const PER_ROUND = 10;
const NS_PER_MS = 1e6;

/** Until exit and closed pipes: the agent, too, answers only once the output is complete. */
function spawnTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('true');
    child.once('error', reject);
    child.once('close', () => resolve());
  });
}

async function collect(op: () => Promise<unknown>, times: number, into: number[]): Promise<void> {
  for (let i = 0; i < times; i++) into.push(await durationNs(op));
}

/**
 * `POST /v1/exec {argv:['true']}` against an out-of-process agent, against its floor: a raw
 * `spawn('true')` to completion plus one bare HTTP round trip over a kept-alive loopback
 * connection to a server in another process. Target: p50 ≤ 1.5× the floor's p50.
 */
export async function benchExec(): Promise<Verdict[]> {
  const agent = await startAgentProcess();
  const floor = await startFloorServer();
  try {
    const floorClient = keepAliveAgent();
    const agentClient = keepAliveAgent();
    const roundTrip = async (): Promise<void> => {
      const reply = await request(`http://127.0.0.1:${floor.httpPort}/`, { agent: floorClient });
      if (reply.status !== 204) throw new Error(`floor server answered ${reply.status}`);
    };
    const exec = async (): Promise<void> => {
      const reply = await request(`${agent.httpUrl}/v1/exec`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ argv: ['true'] }),
        agent: agentClient,
      });
      const result = JSON.parse(reply.text) as { exit_code?: number; duration_ms?: number };
      if (reply.status !== 200 || result.exit_code !== 0)
        throw new Error(`exec answered ${reply.status}: ${reply.text.slice(0, 300)}`);
      reported.push(result.duration_ms ?? Number.NaN);
    };
    // The agent's own duration_ms (spawn to closed pipes, whole ms) separates process cost from HTTP cost.
    const reported: number[] = [];
    const spawns: number[] = [];
    const trips: number[] = [];
    const execs: number[] = [];
    await collect(spawnTrue, WARMUP, []);
    await collect(roundTrip, WARMUP, []);
    await collect(exec, WARMUP, []);
    for (let round = 0; round < ROUNDS; round++) {
      await collect(spawnTrue, PER_ROUND, spawns);
      await collect(roundTrip, PER_ROUND, trips);
      await collect(exec, PER_ROUND, execs);
    }
    floorClient.destroy();
    agentClient.destroy();
    const floorP50 = percentile(spawns, 50) + percentile(trips, 50);
    const floorP99 = percentile(spawns, 99) + percentile(trips, 99);
    return [
      info('exec floor: spawn true (p50)', percentile(spawns, 50) / NS_PER_MS, 'ms', '(floor)'),
      info('exec floor: HTTP round trip (p50)', percentile(trips, 50) / 1000, 'µs', '(floor)'),
      info('exec POST /v1/exec true (p50)', percentile(execs, 50) / NS_PER_MS, 'ms'),
      atMost('exec p50 / floor p50', percentile(execs, 50) / floorP50, '×', 1.5),
      info('exec POST /v1/exec true (p99)', percentile(execs, 99) / NS_PER_MS, 'ms'),
      info('exec p99 / floor p99', percentile(execs, 99) / floorP99, '×'),
      info('exec duration_ms as the agent reports it (p50)', percentile(reported.slice(WARMUP), 50), 'ms'),
    ];
  } finally {
    await floor.stop();
    await agent.stop();
  }
}
