// What the soak (soak.ts) reads between its cycles, with no cycle in flight and the warm
// pool full again, so that every sample counts the same things: the broker's memory (RSS
// from /proc, heap after a full collection through the inspector) and descriptors, its
// agents, the workspace mounts and sandbox cgroups left on the host, and the database rows
// that should be gone. No jest here.
import type { Database } from '../../services/broker/src/store/database.js';
import { brokerMemory, type BrokerMemory } from './load-kit.js';
import {
  agentsOf,
  mib,
  mountsUnder,
  percentile,
  rssOf,
  sandboxCgroupParents,
  sandboxesWithCgroups,
} from './probes.js';

export interface SoakSample {
  readonly minute: number;
  readonly cycles: number;
  readonly errors: number;
  readonly broker: BrokerMemory;
  readonly agents: number;
  readonly agentRssP50: number;
  /** Workspace mounts of sandboxes that are not warm (ended ones, left mounted). */
  readonly strayMounts: number;
  /** cgroups of this broker's sandboxes that are not warm. */
  readonly strayCgroups: number;
  /** Sandbox rows that are not terminated (with no cycle in flight: none should be). */
  readonly liveRows: number;
  readonly terminatedRows: number;
  /** Terminated longer ago than the retention. */
  readonly pastRetention: number;
  /** Bindings still live (with no cycle in flight: none should be). */
  readonly liveBindings: number;
  /** Rows of the tables that grow with every cycle: bindings, token issuances, audit events. */
  readonly historyRows: number;
}

export interface SoakTarget {
  readonly db: Database;
  readonly brokerPid: number;
  readonly inspectorUrl: string;
  readonly dataDir: string;
  readonly retentionMs: number;
}

export async function sample(
  target: SoakTarget,
  minute: number,
  cycles: number,
  errors: number,
): Promise<SoakSample> {
  const { db, brokerPid } = target;
  const warm = new Set((await db.prisma.warmSandbox.findMany({ select: { id: true } })).map((row) => row.id));
  const known = new Set((await db.prisma.sandbox.findMany({ select: { id: true } })).map((row) => row.id));
  const agents = agentsOf(brokerPid);
  // Below the workspaces directory: it is a bind of itself while volumes are mounted (shared-parent.ts).
  const mounts = mountsUnder(`${target.dataDir}/workspaces`, brokerPid)
    .filter((m) => m !== `${target.dataDir}/workspaces`)
    .map((m) => m.slice(m.lastIndexOf('/') + 1));
  const cgroups = [...sandboxesWithCgroups(sandboxCgroupParents(brokerPid))].filter((id) => known.has(id));
  const retentionEnd = new Date(Date.now() - target.retentionMs);
  const [liveRows, terminatedRows, pastRetention, liveBindings, bindings, tokens, audit] = await Promise.all([
    db.prisma.sandbox.count({ where: { state: { not: 'terminated' } } }),
    db.prisma.sandbox.count({ where: { state: 'terminated' } }),
    db.prisma.sandbox.count({ where: { state: 'terminated', terminatedAt: { lt: retentionEnd } } }),
    db.prisma.sessionBinding.count({ where: { live: true } }),
    db.prisma.sessionBinding.count(),
    db.prisma.tokenIssuance.count(),
    db.prisma.auditEvent.count(),
  ]);
  return {
    minute,
    cycles,
    errors,
    broker: await brokerMemory(brokerPid, target.inspectorUrl),
    agents: agents.size,
    agentRssP50: percentile([...agents.values()].map(rssOf), 50),
    strayMounts: mounts.filter((id) => !warm.has(id)).length,
    strayCgroups: cgroups.filter((id) => !warm.has(id)).length,
    liveRows,
    terminatedRows,
    pastRetention,
    liveBindings,
    historyRows: bindings + tokens + audit,
  };
}

const COLUMNS = [
  'min',
  'cycles',
  'errors',
  'RSS MiB',
  'heap MiB',
  'fds',
  'agents',
  'agent RSS',
  'mounts',
  'cgroups',
  'live rows',
  'ended rows',
  'past ret.',
  'bindings',
  'history',
];

export const HEADER = COLUMNS.map((c) => c.padStart(10)).join('');

export function tableRow(s: SoakSample): string {
  return [
    s.minute.toFixed(1),
    s.cycles,
    s.errors,
    mib(s.broker.rss),
    mib(s.broker.heapUsed),
    s.broker.fds,
    s.agents,
    mib(s.agentRssP50),
    s.strayMounts,
    s.strayCgroups,
    s.liveRows,
    s.terminatedRows,
    s.pastRetention,
    s.liveBindings,
    s.historyRows,
  ]
    .map((value) => String(value).padStart(10))
    .join('');
}

/**
 * What counts as growth, between the first sample after the warm-up (a third of the run:
 * JIT code, pools and caches made by then) and the last. Memory: heap after a full
 * collection within 10 % or 8 MiB, RSS within 15 % or 48 MiB (freed pages go back to the
 * system late). Descriptors within 16 (a pool agent's pipes and sockets while the pool
 * refills; every sample is taken with the pool full, so more is a leak). Host and database:
 * nothing of ended sandboxes at all, and none terminated longer ago than the retention.
 */
export function growth(baseline: SoakSample, last: SoakSample, pool: number): string[] {
  const found: string[] = [];
  const more = (what: string, from: number, to: number, slack: number): void => {
    if (to > from + slack) found.push(`${what}: ${from} → ${to} (more than ${Math.round(slack)} more)`);
  };
  more(
    'broker heap bytes',
    baseline.broker.heapUsed,
    last.broker.heapUsed,
    Math.max(baseline.broker.heapUsed * 0.1, 8 * 2 ** 20),
  );
  more(
    'broker RSS bytes',
    baseline.broker.rss,
    last.broker.rss,
    Math.max(baseline.broker.rss * 0.15, 48 * 2 ** 20),
  );
  more('broker descriptors', baseline.broker.fds, last.broker.fds, 16);
  more('agents', pool, last.agents, 0);
  more('mounts of ended sandboxes', 0, last.strayMounts, 0);
  more('cgroups of ended sandboxes', 0, last.strayCgroups, 0);
  more('sandbox rows not terminated', 0, last.liveRows, 0);
  more('live bindings', 0, last.liveBindings, 0);
  more('terminated sandboxes past the retention', 0, last.pastRetention, 0);
  if (last.errors > 0) found.push(`${last.errors} cycles failed`);
  return found;
}
