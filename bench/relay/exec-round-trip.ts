/**
 * Exec round trip: the relayed `POST /v1/sandboxes/{id}/commands {cmd: 'true'}` (the broker
 * authenticates, rate-limits, finds the sandbox, renews its lease, mints and records a token,
 * calls the agent's `/v1/exec`, audits the call) against the floor: the same call with the
 * token negotiated once through a bare node:http proxy in a process of its own
 * (pipe-proxy.ts), the machine's own cost of any hop. For context, the direct
 * `POST {agent}/v1/exec` (no hop at all), a minimal Express route (express-proxy.ts: what
 * Express alone adds) and the stage `GET /v1/sandboxes/{id}`, what the broker's read-only
 * path (authentication, rate limit, one lookup) costs on its own. Alternating
 * rounds (bench/execute_code's `alternateRounds`), each subject on its own kept-alive
 * connection; broker and proxy CPU per call are charged per round, with Postgres's; then
 * the database writes of a batch of relayed calls.
 */
import { info, percentile, ratioAtMost, type Verdict } from '../lib/measure.js';
import { alternateRounds, type Subject, type Tally } from '../execute_code/rounds.js';
import type { RelayWorld } from './relay-world.js';
import { directExec, getSandbox, relayExec, type DirectAccess } from './relay-client.js';
import { startProxyProcess, type ProxyProcess } from './proxy-process.js';
import { writesPerCall } from './table-writes.js';

/** 32 rounds of 10: 320 timed calls per subject after 30 warm-up calls each. */
const PLAN = { warmupCalls: 30, rounds: 32, callsPerRound: 10 };
/** Relayed calls between the two readings of the database's counters. */
const WRITE_CALLS = 100;
/** Relay p50 against the bare proxy's. */
const TARGET_RATIO = 1.1;
const MS = 1e6;

type Name = 'relay' | 'direct' | 'proxy' | 'express' | 'get';

export async function benchExecRoundTrip(world: RelayWorld): Promise<Verdict[]> {
  const access = await world.direct();
  const proxy = await startProxyProcess(access.agentUrl);
  try {
    const express = await startProxyProcess(access.agentUrl, 'bench/relay/express-proxy.ts');
    try {
      return await measure(world, access, { proxy, express });
    } finally {
      await express.stop();
    }
  } finally {
    await proxy.stop();
  }
}

interface ContextProxies {
  /** pipe-proxy.ts: any extra hop. */
  readonly proxy: ProxyProcess;
  /** express-proxy.ts: an Express route that forwards the command. */
  readonly express: ProxyProcess;
}

async function measure(world: RelayWorld, access: DirectAccess, proxies: ContextProxies): Promise<Verdict[]> {
  const { broker, key, sandboxId } = world;
  const { proxy, express } = proxies;
  const viaProxy = { ...access, agentUrl: proxy.url };
  const viaExpress = { ...access, agentUrl: express.url };
  const subjects: ReadonlyArray<Subject & { readonly name: Name }> = [
    { name: 'relay', op: async (agent) => (await relayExec(broker.url, key, sandboxId, agent)).duration_ms },
    { name: 'direct', op: async (agent) => (await directExec(access, agent)).duration_ms },
    { name: 'proxy', op: async (agent) => (await directExec(viaProxy, agent)).duration_ms },
    { name: 'express', op: async (agent) => (await directExec(viaExpress, agent)).duration_ms },
    {
      name: 'get',
      op: async (agent) => {
        await getSandbox(broker.url, key, sandboxId, agent);
        return undefined;
      },
    },
  ];
  // Broker and proxies together: each round charges all to its subject, and those not
  // called in a round only do background work (the lines name the one that was called).
  const cpu = {
    brokerCpuMs: () => broker.cpuMs() + proxy.cpuMs() + express.cpuMs(),
    database: world.database.name,
  };
  const t = Object.fromEntries(await alternateRounds(subjects, PLAN, cpu)) as Record<Name, Tally>;
  const p = (tally: Tally, q: number): number => percentile(tally.latenciesNs, q) / MS;
  const perCallUs = (ms: number, tally: Tally): number => (ms * 1000) / tally.latenciesNs.length;
  const writes = await writesPerCall(world.database, WRITE_CALLS, () =>
    relayExec(broker.url, key, sandboxId),
  );
  return [
    info('exec: calls per subject (after warm-up)', t.relay.latenciesNs.length, ''),
    info('exec: floor bare proxy → POST {agent}/v1/exec p50', p(t.proxy, 50), 'ms', '(floor)'),
    info('exec: floor bare proxy → POST {agent}/v1/exec p99', p(t.proxy, 99), 'ms', '(floor)'),
    info('exec: relay POST /v1/sandboxes/{id}/commands p50', p(t.relay, 50), 'ms'),
    info('exec: relay POST /v1/sandboxes/{id}/commands p99', p(t.relay, 99), 'ms'),
    ratioAtMost(
      'exec: relay / bare proxy p50',
      { subject: p(t.relay, 50), floor: p(t.proxy, 50), unit: 'ms' },
      TARGET_RATIO,
    ),
    info('exec: relay / bare proxy p99', p(t.relay, 99) / p(t.proxy, 99), '×'),
    info('exec: relay − bare proxy p50', p(t.relay, 50) - p(t.proxy, 50), 'ms'),
    info('exec: context direct POST {agent}/v1/exec p50', p(t.direct, 50), 'ms'),
    info('exec: context direct POST {agent}/v1/exec p99', p(t.direct, 99), 'ms'),
    info('exec: bare proxy / direct p50', p(t.proxy, 50) / p(t.direct, 50), '×'),
    info('exec: relay / direct p50', p(t.relay, 50) / p(t.direct, 50), '×'),
    info('exec: relay / direct p99', p(t.relay, 99) / p(t.direct, 99), '×'),
    info('exec: context direct through a minimal Express route p50', p(t.express, 50), 'ms'),
    info('exec: minimal Express route / direct p50', p(t.express, 50) / p(t.direct, 50), '×'),
    info('exec: relay − minimal Express route p50', p(t.relay, 50) - p(t.express, 50), 'ms'),
    info('exec: stage GET /v1/sandboxes/{id} p50', p(t.get, 50), 'ms'),
    info('exec: stage GET /v1/sandboxes/{id} p99', p(t.get, 99), 'ms'),
    info('exec: agent duration_ms p50: direct', percentile(t.direct.agentMs, 50), 'ms'),
    info('exec: agent duration_ms p50: relay', percentile(t.relay.agentMs, 50), 'ms'),
    info('exec: broker CPU per relayed call', perCallUs(t.relay.brokerCpuMs, t.relay), 'µs'),
    info('exec: broker CPU per GET /v1/sandboxes/{id}', perCallUs(t.get.brokerCpuMs, t.get), 'µs'),
    info('exec: bare proxy CPU per call', perCallUs(t.proxy.brokerCpuMs, t.proxy), 'µs'),
    info('exec: minimal Express route CPU per call', perCallUs(t.express.brokerCpuMs, t.express), 'µs'),
    info(
      'exec: broker + proxy CPU per direct call (background)',
      perCallUs(t.direct.brokerCpuMs, t.direct),
      'µs',
    ),
    info('exec: Postgres CPU per relayed call', perCallUs(t.relay.postgresCpuMs, t.relay), 'µs'),
    info('exec: Postgres CPU per GET /v1/sandboxes/{id}', perCallUs(t.get.postgresCpuMs, t.get), 'µs'),
    info('exec: commits per relayed call', writes.commits, ''),
    info('exec: rows inserted + updated per relayed call', writes.rows, ''),
    ...writes.byTable.map(([table, rows]) => info(`exec: rows per relayed call: ${table}`, rows, '')),
  ];
}
