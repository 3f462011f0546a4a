// What the agent reports to its metrics, without knowing how they are kept: the
// composition root (main.ts) passes a prom-client implementation
// (adapters/prom-agent-metrics.ts); an agent without one reports nothing.

export interface AgentMetrics {
  /** A credential was refused: `missing`, `malformed`, or a token's reason (`expired`, `revoked` …). */
  authFailed(reason: string): void;
  /** Bytes of an HTTP exchange, headers included, as the socket counted them. */
  bytesMoved(direction: 'in' | 'out', bytes: number): void;
  /** The exposition text, with the features' current counters (shells, processes …) as gauges. */
  render(stats: Readonly<Record<string, number>>): Promise<{
    readonly contentType: string;
    readonly body: string;
  }>;
}
