// The agent's metrics on prom-client, in a Registry of its own (never the
// process-wide default one: tests run several agents in one process).
import { Counter, Gauge, Registry } from 'prom-client';
import type { AgentMetrics } from '../domain/metrics/agent-metrics.js';

export function createPromAgentMetrics(registry: Registry = new Registry()): AgentMetrics {
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
    authFailed: (reason) => authFailures.inc({ reason }),
    bytesMoved: (direction, n) => {
      if (n > 0) bytes.inc({ direction }, n);
    },
    async render(stats) {
      shells.set(stats['shells'] ?? 0);
      processes.set(stats['processes'] ?? 0);
      stat.reset();
      for (const [name, value] of Object.entries(stats))
        if (name !== 'shells' && name !== 'processes') stat.set({ name }, value);
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
