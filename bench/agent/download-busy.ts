import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { keepAliveAgent, request } from '../lib/http-client.js';
import { atLeast, info, median, type Verdict } from '../lib/measure.js';
import { cpuMs, MIB, rssBytes } from '../lib/process-stats.js';
import { startAgentProcess, type AgentProcess } from './agent-process.js';
import { FILE_BYTES, FILE_MIB, writeTestFile } from './download.js';
import { startFloorServer, type FloorServer } from './floor-process.js';

const ROUNDS = 7;
/** How many execs make an agent "busy": a few hundred, as a working session runs. */
const EXECS = 300;
const run = promisify(execFile);

/** Minor page faults of `pid` so far (field 10 of /proc/<pid>/stat). */
function minorFaults(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7]);
}

/** One download by curl (its own process, its own timing): seconds from start to the last byte. */
async function curl(url: string, headers: readonly string[] = []): Promise<number> {
  const format = '%{http_code} %{size_download} %{time_total}';
  const auth = headers.flatMap((header) => ['-H', header]);
  const { stdout } = await run('curl', ['-sS', '-o', '/dev/null', '-w', format, ...auth, url]);
  const [status, bytes, seconds] = stdout.trim().split(' ').map(Number);
  if (status !== 200 || bytes !== FILE_BYTES) throw new Error(`curl ${url}: ${status}, ${bytes} bytes`);
  return seconds ?? Number.NaN;
}

/** Per download: CPU time and minor page faults of a server process. */
interface Cost {
  cpuMs: number;
  faults: number;
}

interface Phase {
  readonly floor: number[];
  readonly agent: number[];
  readonly floorCost: Cost;
  readonly agentCost: Cost;
}

/** Runs `download` and adds the server's CPU time and page faults (averaged over the rounds) to `cost`. */
async function costed(pid: number, cost: Cost, download: () => Promise<number>): Promise<number> {
  const [cpu, faults] = [cpuMs(pid), minorFaults(pid)];
  const seconds = await download();
  cost.cpuMs += (cpuMs(pid) - cpu) / ROUNDS;
  cost.faults += (minorFaults(pid) - faults) / ROUNDS;
  return seconds;
}

/** Alternating rounds, floor first: load from elsewhere on the machine hits both alike. */
async function measure(agent: AgentProcess, floor: FloorServer, file: string): Promise<Phase> {
  const floorUrl = `http://127.0.0.1:${floor.httpPort}/file?path=${encodeURIComponent(file)}`;
  const agentUrl = `${agent.httpUrl}/files/${path.basename(file)}`;
  const auth = [`Authorization: Bearer ${agent.token}`];
  const phase: Phase = {
    floor: [],
    agent: [],
    floorCost: { cpuMs: 0, faults: 0 },
    agentCost: { cpuMs: 0, faults: 0 },
  };
  for (let round = 0; round < ROUNDS; round++) {
    phase.floor.push(await costed(floor.pid, phase.floorCost, () => curl(floorUrl)));
    phase.agent.push(await costed(agent.pid, phase.agentCost, () => curl(agentUrl, auth)));
  }
  return phase;
}

/** `POST /v1/exec {argv:['true']}`, one after another over a kept-alive connection. */
async function serveExecs(agent: AgentProcess, count: number): Promise<void> {
  const client = keepAliveAgent();
  for (let i = 0; i < count; i++) {
    const reply = await request(`${agent.httpUrl}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ argv: ['true'] }),
      agent: client,
    });
    if (reply.status !== 200) throw new Error(`exec answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  }
  client.destroy();
}

function verdicts(name: string, phase: Phase): Verdict[] {
  const mibPerS = (seconds: number): number => FILE_MIB / seconds;
  return [
    info(`download ${name} floor: bare node server, curl`, mibPerS(median(phase.floor)), 'MiB/s', '(floor)'),
    info(`download ${name} agent, curl`, mibPerS(median(phase.agent)), 'MiB/s'),
    info(`download ${name} CPU per download: floor server`, phase.floorCost.cpuMs, 'ms'),
    info(`download ${name} CPU per download: agent`, phase.agentCost.cpuMs, 'ms'),
    info(`download ${name} minor faults per download: floor server`, phase.floorCost.faults, ''),
    info(`download ${name} minor faults per download: agent`, phase.agentCost.faults, ''),
    atLeast(`download ${name} agent / floor (curl)`, median(phase.floor) / median(phase.agent), '×', 0.8),
  ];
}

/**
 * `GET /files/<file>` of a 256 MiB file by curl, against a bare node file server in its own
 * process (also read by curl), 7 alternating rounds each, median: first on a fresh agent,
 * then once it has served 300 execs. Target ≥ 0.8× both times (floor time / agent time).
 */
export async function benchDownloadBusy(): Promise<Verdict[]> {
  const agent = await startAgentProcess();
  const floor = await startFloorServer();
  try {
    const file = path.join(agent.workspace, 'download.bin');
    writeTestFile(file);
    const fresh = await measure(agent, floor, file);
    const rssBefore = rssBytes(agent.pid);
    await serveExecs(agent, EXECS);
    const rssAfter = rssBytes(agent.pid);
    const busy = await measure(agent, floor, file);
    return [
      ...verdicts('fresh', fresh),
      info(`download busy: agent RSS before the execs`, rssBefore / MIB, 'MiB'),
      info(`download busy: agent RSS after ${EXECS} execs`, rssAfter / MIB, 'MiB'),
      ...verdicts('busy', busy),
    ];
  } finally {
    await floor.stop();
    await agent.stop();
  }
}
