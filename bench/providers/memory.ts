import { setTimeout as sleep } from 'node:timers/promises';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { DEFAULT_SANDBOX_LIMITS } from '../../services/broker/src/providers/sandbox-limits.js';
import { BENCH_SANDBOX_LIMITS } from '../broker/bench-limits.js';
import { atMost, info, median, type Verdict } from '../lib/measure.js';
import { MIB } from '../lib/process-stats.js';
import { spawnTracked, stopTracked } from '../lib/resources.js';
import { ShellSocket } from '../agent/shell-socket.js';
import type { ProviderWorld } from './provider-world.js';
import {
  addMemory,
  agentPidOf,
  memoryOf,
  NO_MEMORY,
  PROCESS_ROLES,
  sandboxMemory,
  type Memory,
  type ProcessRole,
} from './sandbox-processes.js';

/** A small warm pool; `BENCH_SANDBOXES` for another size (pages of node are shared among them all). */
const SANDBOXES = Number(process.env['BENCH_SANDBOXES'] ?? 8);
const TARGET_MIB = 48;
/** After the last shell is ready: what a just-started sandbox holds. */
const FRESH_MS = 2000;
/** V8's memory reducer shrinks an idle heap about 8 s after start-up; give it ample time. */
const SETTLED_MS = 30_000;
const ISSUER = 'sbx-bench';
/**
 * The default limits with the bench's workspace image (bench/broker/bench-limits.ts): the disk
 * budget promises every image in full, and 10 GiB images fit about six on this machine.
 */
const LIMITS = { ...DEFAULT_SANDBOX_LIMITS, diskBytes: BENCH_SANDBOX_LIMITS.max_disk_mb * MIB };

interface Sandbox {
  readonly sandboxId: string;
  readonly agentPid: number;
  readonly shell: ShellSocket;
}

type Breakdown = Map<ProcessRole, { memory: Memory; count: number }>;

async function startSandbox(world: ProviderWorld, index: number): Promise<Sandbox> {
  const sandboxId = `sb_bench_mem_${process.pid}_${index}`;
  const signingKey = SigningKey.generate();
  const { dataplane } = await world.provider.create({
    sandboxId,
    tenantId: 'tenant_bench',
    signingKey,
    tokenIssuer: ISSUER,
    network: 'on',
    limits: LIMITS,
  });
  const token = mintCapabilityToken({
    key: signingKey,
    issuer: ISSUER,
    subject: 'usr_bench',
    sandboxId,
    scopes: ['shell'],
    ttlSeconds: 3600,
  }).token;
  const agentPid = agentPidOf(sandboxId);
  return { sandboxId, agentPid, shell: await ShellSocket.start(dataplane.wsBaseUrl, token) };
}

function totalOf(breakdown: Breakdown): Memory {
  return [...breakdown.values()].reduce((sum, entry) => addMemory(sum, entry.memory), NO_MEMORY);
}

const mib = (bytes: number): number => bytes / MIB;
const max = (values: readonly number[]): number => Math.max(...values);

/** Per-sandbox totals (p50 and max), the breakdown by role (p50) and the floor, for one moment. */
function verdictsAt(
  label: string,
  breakdowns: readonly Breakdown[],
  floor: Memory,
  gated: boolean,
): Verdict[] {
  const totals = breakdowns.map(totalOf);
  const pss = totals.map((total) => mib(total.pss));
  const verdicts = [
    info(
      `${label}: floor, bare node PSS / RSS`,
      mib(floor.pss),
      'MiB',
      `(floor) RSS ${mib(floor.rss).toFixed(1)}`,
    ),
    info(`${label}: floor, bare node USS (private)`, mib(floor.uss), 'MiB', '(floor)'),
    info(`${label}: per sandbox PSS p50`, median(pss), 'MiB'),
    gated
      ? atMost(`${label}: per sandbox PSS max`, max(pss), 'MiB', TARGET_MIB)
      : info(`${label}: per sandbox PSS max`, max(pss), 'MiB'),
    info(
      `${label}: per sandbox RSS p50 (shared pages counted in full)`,
      median(totals.map((t) => mib(t.rss))),
      'MiB',
    ),
    info(`${label}: per sandbox USS p50 (private pages only)`, median(totals.map((t) => mib(t.uss))), 'MiB'),
  ];
  for (const role of PROCESS_ROLES) {
    const entries = breakdowns.map((b) => b.get(role)!);
    const count = max(entries.map((e) => e.count));
    if (count === 0) continue;
    const p50 = (pick: (m: Memory) => number): number => median(entries.map((e) => mib(pick(e.memory))));
    verdicts.push(
      info(
        `${label}: ${role} (${count} proc) PSS p50`,
        p50((m) => m.pss),
        'MiB',
        `(report) RSS ${p50((m) => m.rss).toFixed(1)} USS ${p50((m) => m.uss).toFixed(1)}`,
      ),
    );
  }
  return verdicts;
}

/**
 * Memory per local sandbox with one idle shell open: the agent, its bubblewrap holder,
 * slirp4netns and the shell's processes, summed per sandbox from /proc/<pid>/smaps_rollup.
 * Read twice: just after start-up and once idle (the state of a warm pool), when the
 * per-sandbox PSS must be ≤ 48 MiB. The floor is a bare `node` idling in the same run.
 */
export async function benchSandboxMemory(world: ProviderWorld): Promise<Verdict[]> {
  const floorProcess = spawnTracked(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], {
    stdio: 'ignore',
  });
  const sandboxes: Sandbox[] = [];
  try {
    for (let i = 0; i < SANDBOXES; i++) sandboxes.push(await startSandbox(world, i));
    const read = (): { breakdowns: Breakdown[]; floor: Memory } => ({
      breakdowns: sandboxes.map((sandbox) => sandboxMemory(sandbox.agentPid)),
      floor: memoryOf(floorProcess.pid!),
    });
    await sleep(FRESH_MS);
    const fresh = read();
    await sleep(SETTLED_MS - FRESH_MS);
    const settled = read();
    return [
      info('sandboxes measured, each with one idle shell', sandboxes.length, ''),
      ...verdictsAt('fresh', fresh.breakdowns, fresh.floor, false),
      ...verdictsAt('idle', settled.breakdowns, settled.floor, true),
    ];
  } catch (err) {
    if (world.logs.length > 0) console.error(world.logs.slice(-20).join(''));
    throw err;
  } finally {
    await Promise.all(sandboxes.map((sandbox) => sandbox.shell.end()));
    for (const sandbox of sandboxes) await world.provider.destroy(sandbox.sandboxId);
    await stopTracked(floorProcess, 1000);
  }
}
