/**
 * Download throughput: a 256 MiB file of random bytes in the sandbox's workspace, read in full
 * through the relay (`GET /v1/sandboxes/{id}/files?path=`, streamed by the broker) and
 * through the floor, a bare node:http proxy in its own process (pipe-proxy.ts) in front of
 * the agent's `GET {agent}/v1/files/download?path=`: what any hop costs on this machine,
 * with none of the broker's work. For context, the same download directly (no hop). Rounds
 * whose order rotates, the same byte-counting node:http client on kept-alive connections;
 * MiB/s is the file size over the whole request (headers to last byte); the verdict is the
 * ratio of medians. CPU per download of the broker, of the sandbox's processes (its agent)
 * and of this client says which process limits each path; the broker's RSS is sampled
 * during relayed downloads.
 */
import { readFileSync } from 'node:fs';
import { keepAliveAgent } from '../lib/http-client.js';
import { durationNs, info, median, ratioAtLeast, type Verdict } from '../lib/measure.js';
import { cpuMs, MIB, rssBytes, sampleRss } from '../lib/process-stats.js';
import { processesOf } from '../broker/sandbox-processes.js';
import { startProxyProcess, type ProxyProcess } from './proxy-process.js';
import type { RelayWorld } from './relay-world.js';
import { directCommand, directDownload, relayDownload, type DirectAccess } from './relay-client.js';

const FILE = 'bench-download.bin';
const SIZE = 256 * MIB;
const WARMUP_ROUNDS = 1;
/** Each of the three paths goes first in two or three of them. */
const ROUNDS = 7;
/** Relay throughput against the bare proxy's. */
const TARGET_RATIO = 0.95;

type PathName = 'relay' | 'direct' | 'proxy';

interface PathTally {
  readonly mibPerSecond: number[];
  readonly brokerCpuMs: number[];
  readonly proxyCpuMs: number[];
  readonly sandboxCpuMs: number[];
  readonly clientCpuMs: number[];
  /** read(2)- and write(2)-like calls of the relaying process (broker or proxy) per download. */
  readonly relayReads: number[];
  readonly relayWrites: number[];
  /** Kernel-side CPU ms and minor page faults of the relaying process per download. */
  readonly relaySystemMs: number[];
  readonly relayFaults: number[];
}

/** Read and write system calls (`syscr`, `syscw` of /proc/<pid>/io), minor faults and system CPU of `pid` so far. */
function ioCalls(pid: number): { reads: number; writes: number; faults: number; systemMs: number } {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  // /proc/<pid>/stat after the name: minflt is field 10, stime field 15 (in ticks of 10 ms).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    reads: field('syscr'),
    writes: field('syscw'),
    faults: Number(fields[7]),
    systemMs: Number(fields[12]) * 10,
  };
}

/** CPU ms used so far by every process working in the broker's data dir (the agents and their children). */
function sandboxCpuSnapshot(dataDir: string): Map<number, number> {
  const snapshot = new Map<number, number>();
  for (const pid of processesOf(dataDir)) {
    try {
      snapshot.set(pid, cpuMs(pid));
    } catch {
      // Ended while we looked.
    }
  }
  return snapshot;
}

function sandboxCpuSince(dataDir: string, before: ReadonlyMap<number, number>): number {
  let used = 0;
  for (const [pid, now] of sandboxCpuSnapshot(dataDir)) used += now - (before.get(pid) ?? 0);
  return used;
}

function clientCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

export async function benchDownloadThroughput(world: RelayWorld): Promise<Verdict[]> {
  const access = await world.direct();
  await directCommand(access, `head -c ${SIZE} /dev/urandom > ${FILE}`, 300_000);
  const proxy = await startProxyProcess(access.agentUrl);
  try {
    return await measure(world, access, proxy);
  } finally {
    await proxy.stop();
    await directCommand(access, `rm -f ${FILE}`, 30_000);
  }
}

const emptyTally = (): PathTally => ({
  mibPerSecond: [],
  brokerCpuMs: [],
  proxyCpuMs: [],
  sandboxCpuMs: [],
  clientCpuMs: [],
  relayReads: [],
  relayWrites: [],
  relaySystemMs: [],
  relayFaults: [],
});

async function measure(world: RelayWorld, access: DirectAccess, proxy: ProxyProcess): Promise<Verdict[]> {
  const { broker, key, sandboxId } = world;
  const agents = { relay: keepAliveAgent(), direct: keepAliveAgent(), proxy: keepAliveAgent() };
  const viaProxy = { ...access, agentUrl: proxy.url };
  const paths: Record<PathName, () => Promise<number>> = {
    relay: () => relayDownload(broker.url, key, sandboxId, FILE, agents.relay),
    direct: () => directDownload(access, FILE, agents.direct),
    proxy: () => directDownload(viaProxy, FILE, agents.proxy),
  };
  const tallies: Record<PathName, PathTally> = {
    relay: emptyTally(),
    direct: emptyTally(),
    proxy: emptyTally(),
  };
  let rssBefore = Number.NaN;
  let rssPeak = Number.NaN;
  try {
    const once = async (name: PathName, record: boolean): Promise<void> => {
      const brokerBefore = broker.cpuMs();
      const proxyBefore = proxy.cpuMs();
      const sandboxBefore = sandboxCpuSnapshot(broker.dataDir);
      const clientBefore = clientCpuMs();
      const relaying = name === 'proxy' ? proxy.pid : broker.pid;
      const ioBefore = ioCalls(relaying);
      const rss = name === 'relay' && record ? sampleRss(broker.pid, 20) : undefined;
      let bytes = 0;
      const ns = await durationNs(async () => (bytes = await paths[name]()));
      const trace = rss?.stop();
      if (bytes !== SIZE) throw new Error(`${name} download gave ${bytes} bytes, not ${SIZE}`);
      if (!record) return;
      if (trace !== undefined)
        rssPeak = Number.isNaN(rssPeak) ? trace.maxBytes : Math.max(rssPeak, trace.maxBytes);
      const tally = tallies[name];
      tally.mibPerSecond.push(SIZE / MIB / (ns / 1e9));
      tally.brokerCpuMs.push(broker.cpuMs() - brokerBefore);
      tally.proxyCpuMs.push(proxy.cpuMs() - proxyBefore);
      tally.sandboxCpuMs.push(sandboxCpuSince(broker.dataDir, sandboxBefore));
      tally.clientCpuMs.push(clientCpuMs() - clientBefore);
      const ioAfter = ioCalls(relaying);
      tally.relayReads.push(ioAfter.reads - ioBefore.reads);
      tally.relayWrites.push(ioAfter.writes - ioBefore.writes);
      tally.relaySystemMs.push(ioAfter.systemMs - ioBefore.systemMs);
      tally.relayFaults.push(ioAfter.faults - ioBefore.faults);
    };
    const names: readonly PathName[] = ['relay', 'direct', 'proxy'];
    for (let round = 0; round < WARMUP_ROUNDS; round++) for (const name of names) await once(name, false);
    rssBefore = rssBytes(broker.pid);
    // The order rotates: each path goes first in every third round.
    for (let round = 0; round < ROUNDS; round++) {
      const first = round % names.length;
      for (const name of [...names.slice(first), ...names.slice(0, first)]) await once(name, true);
    }
  } finally {
    for (const agent of Object.values(agents)) agent.destroy();
  }
  const { relay, direct } = tallies;
  const bare = tallies.proxy;
  const spread = (values: readonly number[]) => `${Math.min(...values)}–${Math.max(...values)}`;
  const rate = (t: PathTally) => median(t.mibPerSecond);
  const range = (t: PathTally) =>
    `${Math.min(...t.mibPerSecond).toFixed(0)}–${Math.max(...t.mibPerSecond).toFixed(0)}`;
  return [
    info(
      `download: rounds per path (256 MiB each; relay ${range(relay)}, direct ${range(direct)}, proxy ${range(bare)} MiB/s)`,
      ROUNDS,
      '',
    ),
    info('download: floor bare proxy → GET {agent}/v1/files/download median', rate(bare), 'MiB/s', '(floor)'),
    info('download: relay GET /v1/sandboxes/{id}/files median', rate(relay), 'MiB/s'),
    ratioAtLeast(
      'download: relay / bare proxy throughput',
      { subject: rate(relay), floor: rate(bare), unit: 'MiB/s' },
      TARGET_RATIO,
    ),
    info('download: context direct GET {agent}/v1/files/download median', rate(direct), 'MiB/s'),
    info('download: relay / direct throughput', rate(relay) / rate(direct), '×'),
    info('download: bare proxy / direct throughput', rate(bare) / rate(direct), '×'),
    info('download: broker CPU per 256 MiB: direct (background)', median(direct.brokerCpuMs), 'ms'),
    info(
      `download: broker CPU per 256 MiB: relay, range ${spread(relay.brokerCpuMs)}`,
      median(relay.brokerCpuMs),
      'ms',
    ),
    info(
      `download: bare proxy CPU per 256 MiB, range ${spread(bare.proxyCpuMs)}`,
      median(bare.proxyCpuMs),
      'ms',
    ),
    info('download: KiB per read(2) of the broker: relay', SIZE / 1024 / median(relay.relayReads), 'KiB'),
    info('download: KiB per read(2) of the bare proxy', SIZE / 1024 / median(bare.relayReads), 'KiB'),
    info('download: KiB per write(2) of the broker: relay', SIZE / 1024 / median(relay.relayWrites), 'KiB'),
    info('download: KiB per write(2) of the bare proxy', SIZE / 1024 / median(bare.relayWrites), 'KiB'),
    info('download: system CPU per 256 MiB: broker (relay)', median(relay.relaySystemMs), 'ms'),
    info('download: system CPU per 256 MiB: bare proxy', median(bare.relaySystemMs), 'ms'),
    info('download: minor page faults per 256 MiB: broker (relay)', median(relay.relayFaults), ''),
    info('download: minor page faults per 256 MiB: bare proxy', median(bare.relayFaults), ''),
    info('download: sandbox (agent) CPU per 256 MiB: relay', median(relay.sandboxCpuMs), 'ms'),
    info('download: sandbox (agent) CPU per 256 MiB: direct', median(direct.sandboxCpuMs), 'ms'),
    info('download: client CPU per 256 MiB: relay', median(relay.clientCpuMs), 'ms'),
    info('download: sandbox (agent) CPU per 256 MiB: bare proxy', median(bare.sandboxCpuMs), 'ms'),
    info('download: client CPU per 256 MiB: direct', median(direct.clientCpuMs), 'ms'),
    info('download: client CPU per 256 MiB: bare proxy', median(bare.clientCpuMs), 'ms'),
    info('download: broker RSS before relayed downloads', rssBefore / MIB, 'MiB'),
    info('download: broker RSS peak during relayed downloads − before', (rssPeak - rssBefore) / MIB, 'MiB'),
  ];
}
