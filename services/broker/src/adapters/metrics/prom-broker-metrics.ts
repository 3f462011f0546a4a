// The broker's metrics on prom-client, in one Registry per broker (never the
// global default one: several brokers in one process, as in tests, keep apart).
// Counters are incremented where their event happens (BrokerMetrics); the
// sandbox and session gauges are read from the database on each scrape.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { SANDBOX_STATES } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { BrokerMetrics } from '../../domain/metrics/broker-metrics.js';
import type { StateCounts } from '../../store/state-counts.js';

export interface PromBrokerMetrics extends BrokerMetrics {
  readonly registry: Registry;
  /** One answered HTTP request; `route` is the route template, never the raw path. */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** The exposition text of every metric, and its content type. */
  render(): Promise<{ readonly contentType: string; readonly body: string }>;
}

export interface PromBrokerMetricsOptions {
  readonly registry: Registry;
  /** Read on each scrape; a failure leaves the gauges out of that scrape (logged). */
  readonly stateCounts: () => Promise<StateCounts>;
  readonly logger: Logger;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const PROVISIONING_SECONDS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120];

export function createPromBrokerMetrics(options: PromBrokerMetricsOptions): PromBrokerMetrics {
  const { registry, logger } = options;
  const registers = [registry];
  const requests = new Histogram({
    name: 'sbx_broker_http_request_duration_seconds',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: SECONDS,
    registers,
  });
  const audited = new Counter({
    name: 'sbx_broker_audit_events_total',
    help: 'Audit rows written, by action and outcome (ok or the error code)',
    labelNames: ['action', 'outcome'] as const,
    registers,
  });
  const tokens = new Counter({
    name: 'sbx_broker_tokens_minted_total',
    help: 'Capability tokens issued (negotiation, refresh and token exchange)',
    registers,
  });
  const provisioning = new Histogram({
    name: 'sbx_broker_sandbox_provisioning_seconds',
    help: "Time the provider took to start a sandbox's agent, by outcome",
    labelNames: ['outcome'] as const,
    buckets: PROVISIONING_SECONDS,
    registers,
  });
  const reaper = new Counter({
    name: 'sbx_broker_reaper_actions_total',
    help: 'State changes made (or failed) by the lease reaper loop, by target state and reason',
    labelNames: ['to', 'reason', 'outcome'] as const,
    registers,
  });
  const rateLimited = new Counter({
    name: 'sbx_broker_rate_limited_total',
    help: 'Requests refused with 429 RATE_LIMITED, by bucket',
    labelNames: ['bucket'] as const,
    registers,
  });
  const authRejected = new Counter({
    name: 'sbx_broker_auth_rejections_total',
    help: 'Caller credentials refused, by error code',
    labelNames: ['code'] as const,
    registers,
  });
  // One query per scrape feeds both gauges (the second collect joins the first's).
  let pending: Promise<StateCounts | undefined> | undefined;
  const read = (): Promise<StateCounts | undefined> => {
    pending ??= options
      .stateCounts()
      .catch((err: unknown) => {
        logger.warn({ err }, 'metrics: sandbox and session counts unavailable');
        return undefined;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
  const sandboxes: Gauge<'state'> = new Gauge({
    name: 'sbx_broker_sandboxes',
    help: 'Sandboxes by state (read from the database on scrape)',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      sandboxes.reset();
      const counts = await read();
      for (const state of counts === undefined ? [] : SANDBOX_STATES)
        sandboxes.set({ state }, counts?.sandboxes[state] ?? 0);
    },
  });
  const sessions: Gauge<'state'> = new Gauge({
    name: 'sbx_broker_sessions',
    help: 'Session bindings, held or released (read from the database on scrape)',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      sessions.reset();
      const counts = await read();
      for (const [state, n] of Object.entries(counts?.sessions ?? {})) sessions.set({ state }, n);
    },
  });

  return {
    registry,
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
    observeRequest: (method, route, status, seconds) =>
      requests.observe({ method, route, status: String(status) }, seconds),
    audited(action, outcome) {
      audited.inc({ action, outcome });
      if (action === 'token.issue' && outcome === 'ok') tokens.inc();
    },
    provisioned: (outcome, seconds) => provisioning.observe({ outcome }, seconds),
    reaped: (to, reason, outcome) => reaper.inc({ to, reason, outcome }),
    rateLimited: (bucket) => rateLimited.inc({ bucket }),
    authRejected: (code) => authRejected.inc({ code }),
  };
}
