// What the load tests and the soak share about a broker process under load: the settings
// it runs with (the local provider, a warm pool, the inspector), room for hundreds of
// sandboxes in the default tenant, its pool, its answers by status, what one of its
// sandboxes leaves behind once ended, and the memory of it and its agents. No jest here.
import { WARM_TENANT } from '../../services/broker/src/domain/pools/warm-pool.js';
import type { Database } from '../../services/broker/src/store/database.js';
import { until } from '../../services/broker/test/support/until.js';
import { readHeap } from './inspector.js';
import {
  agentsOf,
  fdCountOf,
  mib,
  mountsUnder,
  percentile,
  pssOf,
  rssOf,
  sandboxCgroupParents,
  sandboxesWithCgroups,
} from './probes.js';

/** SBX_RELIABILITY=long: the long form (reliability/README.md, "load"). */
export const LONG = process.env['SBX_RELIABILITY'] === 'long';

/** What each sandbox of the load may promise itself on disk (see prepareTenants). */
export const LOAD_DISK_MB = 64;

/**
 * The policies a load of hundreds of sandboxes needs, written before any broker starts
 * (the warm pool reads its policy once, at start):
 * - room: the default tenant allows 10 running sandboxes, 5 per owner;
 * - disk: every workspace promises its tenant's `max_disk_mb` (10 GiB by default) and the
 *   local provider admits only what the host's free disk can keep (disk-budget.ts): six
 *   sandboxes on this machine's 79 GB free. The load's sandboxes write a few KiB each.
 * The warm pool makes its sandboxes under the policy of the tenant id WARM_TENANT (the
 * built-in defaults, as no tenant has that id), and a claim needs the tenant's limits to
 * equal the pool's: both get the same smaller disk, so claims still apply.
 */
export async function prepareTenants(db: Database, sandboxes = 1000): Promise<void> {
  const policy = { maxSandboxes: sandboxes, maxSandboxesPerOwner: sandboxes, maxDiskMb: LOAD_DISK_MB };
  for (const tenantId of ['default', WARM_TENANT]) {
    await db.prisma.tenantPolicy.upsert({
      where: { tenantId },
      create: { tenantId, ...policy },
      update: policy,
    });
  }
}

/** Waits until the warm pools of the deployment hold `size` sandboxes in all. */
export async function poolFull(db: Database, size: number, ceilingMs = 300_000): Promise<void> {
  await until(
    async () => (await db.prisma.warmSandbox.count()) >= size,
    `a warm pool of ${size}`,
    100,
    ceilingMs,
  );
}

/** Requests the broker answered, by `status method route` (its /metrics request histogram's counts). */
export async function answersByStatus(brokerUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${brokerUrl}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('sbx_broker_http_request_duration_seconds_count{')) continue;
    const label = (name: string): string => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1] ?? '?';
    const key = `${label('status')} ${label('method')} ${label('route')}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** Answers with a status ≥ 500 between two readings of answersByStatus, by `status method route`. */
export function serverErrorsBetween(
  before: Map<string, number>,
  after: Map<string, number>,
): Map<string, number> {
  const errors = new Map<string, number>();
  for (const [key, n] of after) {
    const more = n - (before.get(key) ?? 0);
    if (Number(key.split(' ')[0]) >= 500 && more > 0) errors.set(key, more);
  }
  return errors;
}

/**
 * The server errors a client may not simply retry: every one but 503, which the protocol
 * makes the retryable "not now" (PROVIDER_UNAVAILABLE with Retry-After, retried by the
 * SDK). 503s are reported: a burst of cold starts beyond what the host starts within the
 * agent's start timeout answers them (reliability/README.md, "load").
 */
export function unretryable(errors: ReadonlyMap<string, number>): Map<string, number> {
  return new Map([...errors].filter(([key]) => !key.startsWith('503 ')));
}

/** The broker's warnings and errors from `offset` on, by message: `n × msg (first error)`. */
export function warningsIn(output: string, offset = 0): string[] {
  const kinds = new Map<string, { n: number; err: string }>();
  for (const line of output.slice(offset).split('\n')) {
    if (!/^\{"level":[4-6]\d/.test(line)) continue;
    const msg = /"msg":"([^"]*)"/.exec(line)?.[1] ?? '?';
    const err = [
      /"err":\{"type":"[^"]*","message":"([^"]{0,200})/.exec(line)?.[1],
      /"signal":"(\w+)"/.exec(line)?.[1],
      /"sandbox_id":"([\w-]+)"/.exec(line)?.[1],
    ]
      .filter((part) => part !== undefined)
      .join(', ');
    const kind = kinds.get(msg) ?? { n: 0, err };
    kind.n += 1;
    kinds.set(msg, kind);
  }
  return [...kinds].map(([msg, { n, err }]) => `${n} × ${msg}${err === '' ? '' : ` (${err})`}`);
}

/** What is left of `sandboxIds` on the host and in the database. Nothing once they ended. */
export interface Leftovers {
  readonly notTerminated: string[];
  readonly agents: string[];
  readonly mounts: string[];
  readonly cgroups: string[];
}

export async function leftoversOf(
  db: Database,
  brokerPids: readonly number[],
  dataDir: string,
  sandboxIds: readonly string[],
): Promise<Leftovers> {
  const ids = new Set(sandboxIds);
  const rows = await db.prisma.sandbox.findMany({
    where: { id: { in: [...ids] } },
    select: { id: true, state: true },
  });
  const agents = brokerPids.flatMap((pid) => [...agentsOf(pid).keys()]).filter((id) => ids.has(id));
  const mounts = brokerPids
    .flatMap((pid) => mountsUnder(`${dataDir}/workspaces`, pid))
    .filter((mount) => ids.has(mount.slice(mount.lastIndexOf('/') + 1)));
  const cgroups = brokerPids.flatMap((pid) =>
    [...sandboxesWithCgroups(sandboxCgroupParents(pid))].filter((id) => ids.has(id)),
  );
  return {
    notTerminated: rows.filter((row) => row.state !== 'terminated').map((row) => `${row.id} ${row.state}`),
    agents,
    mounts: [...new Set(mounts)],
    cgroups: [...new Set(cgroups)],
  };
}

const NOTHING_LEFT: Leftovers = { notTerminated: [], agents: [], mounts: [], cgroups: [] };

/** Waits until ended sandboxes left nothing; resolves with what is left at the ceiling. */
export async function settledLeftovers(
  db: Database,
  brokerPids: readonly number[],
  dataDir: string,
  sandboxIds: readonly string[],
): Promise<Leftovers> {
  let left = NOTHING_LEFT;
  try {
    await until(
      async () => {
        left = await leftoversOf(db, brokerPids, dataDir, sandboxIds);
        return Object.values(left).every((list: string[]) => list.length === 0);
      },
      'the ended sandboxes to leave nothing behind',
      250,
    );
  } catch {
    // Reported by the caller: what is left is the finding.
  }
  return left;
}

export interface BrokerMemory {
  readonly rss: number;
  /** After a full collection (inspector.ts). */
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly fds: number;
}

export async function brokerMemory(pid: number, inspectorUrl: string): Promise<BrokerMemory> {
  const heap = await readHeap(inspectorUrl);
  return {
    rss: rssOf(pid),
    heapUsed: heap.heapUsed,
    heapTotal: heap.heapTotal,
    external: heap.external,
    fds: fdCountOf(pid),
  };
}

export interface AgentMemory {
  readonly count: number;
  readonly rssP50: number;
  readonly rssMax: number;
  /** PSS summed over the agents: what they cost the host together, shared pages once. */
  readonly pssSum: number;
}

/** The node agents of `sandboxIds` below the broker (their shells and bwrap not counted). */
export function agentMemory(brokerPid: number, sandboxIds: readonly string[]): AgentMemory {
  const agents = agentsOf(brokerPid);
  const pids = sandboxIds.flatMap((id) => {
    const pid = agents.get(id);
    return pid === undefined ? [] : [pid];
  });
  const rss = pids.map(rssOf);
  return {
    count: pids.length,
    rssP50: percentile(rss, 50),
    rssMax: percentile(rss, 100),
    pssSum: pids.reduce((sum, pid) => sum + pssOf(pid), 0),
  };
}

export const describeBroker = (m: BrokerMemory): string =>
  `broker RSS ${mib(m.rss)} MiB, heap used ${mib(m.heapUsed)} MiB (after GC) of ${mib(m.heapTotal)}, external ${mib(m.external)} MiB, ${m.fds} fds`;

export const describeAgents = (m: AgentMemory): string =>
  `${m.count} agents: RSS p50 ${mib(m.rssP50)} MiB, max ${mib(m.rssMax)} MiB, PSS sum ${mib(m.pssSum)} MiB`;

/** A broker's log lines at warn level or above (pino: 40 warn, 50 error, 60 fatal) naming `about`. */
export function complaintsAbout(output: string, about: string): string[] {
  return output.split('\n').filter((line) => line.includes(about) && /"level":[4-6]\d/.test(line));
}

/** Those of `sandboxIds` an ensure took from a warm pool (audited `sandbox.claimed`). */
export async function claimedAmong(db: Database, sandboxIds: readonly string[]): Promise<Set<string>> {
  const rows = await db.prisma.auditEvent.findMany({
    where: { action: 'sandbox.claimed', sandboxId: { in: [...sandboxIds] } },
    select: { sandboxId: true },
  });
  return new Set(rows.flatMap((row) => (row.sandboxId === null ? [] : [row.sandboxId])));
}

/** `ensure, warm claims` and `ensure, cold starts`: n, p50, p99, ms. */
export function ensureSplit(ensures: ReadonlyMap<string, number>, claimed: ReadonlySet<string>): string {
  const row = (label: string, values: number[]): string =>
    `${label}: n ${values.length}, p50 ${percentile(values, 50).toFixed(0)} ms, p99 ${percentile(values, 99).toFixed(0)} ms`;
  const warm = [...ensures].filter(([id]) => claimed.has(id)).map(([, ms]) => ms);
  const cold = [...ensures].filter(([id]) => !claimed.has(id)).map(([, ms]) => ms);
  return `${row('ensure, warm claims', warm)}; ${row('cold starts', cold)}`;
}
