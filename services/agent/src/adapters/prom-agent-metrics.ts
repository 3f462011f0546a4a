// The agent's metrics on prom-client, in a Registry of its own (never the
// process-wide default one: tests run several agents in one process). Until the first
// scrape the counts are plain numbers: prom-client and its dependencies (about 1 MiB of
// heap in every agent) load only in agents whose metrics someone reads (bench/providers).
import type { AgentMetrics } from '../domain/metrics/agent-metrics.js';

type PromClient = typeof import('prom-client');

/** Totals since start, by label value. */
type Totals = Map<string, number>;

function add(totals: Totals, key: string, n: number): void {
  totals.set(key, (totals.get(key) ?? 0) + n);
}

interface Exposition {
  render(
    authFailures: Totals,
    bytes: Totals,
    stats: Readonly<Record<string, number>>,
  ): Promise<{ contentType: string; body: string }>;
}

function exposition({ Counter, Gauge, Registry }: PromClient): Exposition {
  const registry = new Registry();
  const registers = [registry];
  const authFailures = new Counter({
    name: 'sbx_agent_auth_failures_total',
    help: 'Refused credentials on HTTP and WebSocket, by reason',
    labelNames: ['reason'] as const,
    registers,
  });
  const bytes = new Counter({
    name: 'sbx_agent_http_bytes_total',
    help: 'Bytes moved by HTTP requests and WebSocket streams (headers and frames included), by direction',
    labelNames: ['direction'] as const,
    registers,
  });
  const shells = new Gauge({ name: 'sbx_agent_shells', help: 'Shells open', registers });
  const processes = new Gauge({ name: 'sbx_agent_processes', help: 'Processes running', registers });
  const stat = new Gauge({
    name: 'sbx_agent_feature_stat',
    help: "The features' other counters, by name",
    labelNames: ['name'] as const,
    registers,
  });
  return {
    async render(failureTotals, byteTotals, stats) {
      // Counters are set to the totals kept outside: reset, then one increment each.
      authFailures.reset();
      for (const [reason, n] of failureTotals) authFailures.inc({ reason }, n);
      bytes.reset();
      for (const [direction, n] of byteTotals) bytes.inc({ direction }, n);
      shells.set(stats['shells'] ?? 0);
      processes.set(stats['processes'] ?? 0);
      stat.reset();
      for (const [name, value] of Object.entries(stats))
        if (name !== 'shells' && name !== 'processes') stat.set({ name }, value);
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

export function createPromAgentMetrics(): AgentMetrics {
  const authFailures: Totals = new Map();
  const bytes: Totals = new Map();
  let loaded: Promise<Exposition> | undefined;
  return {
    authFailed: (reason) => add(authFailures, reason, 1),
    bytesMoved: (direction, n) => {
      if (n > 0) add(bytes, direction, n);
    },
    async render(stats) {
      loaded ??= import('prom-client').then(exposition);
      return (await loaded).render(authFailures, bytes, stats);
    },
  };
}
