import type { Router } from 'express';
import type { Logger } from '@sbx/service-kit';
import type { Launcher } from './adapters/launcher.js';
import type { PathGuard } from './domain/files/path-guard.js';
import type { KeySource } from './adapters/key-source.js';
import type { SandboxEnvironment } from './adapters/sandbox-env-file.js';
import type { AgentMetrics } from './domain/metrics/agent-metrics.js';
import type { FeatureReport } from './domain/metrics/usage-counters.js';
import type { Authenticator } from './http/authenticator.js';
import type { WsRoute } from './http/ws/ws-session.js';

/** What every feature of the agent is built from; assembled once in main.ts. */
export interface AgentContext {
  readonly sandboxId: string;
  /**
   * The gate of every path: the sandbox's filesystem as its user sees it, the workspace
   * (`workspace.workspace`, also HOME) where relative paths start.
   */
  readonly workspace: PathGuard;
  readonly logger: Logger;
  readonly now: () => number;
  readonly launcher: Launcher;
  readonly keys: KeySource;
  readonly authenticator: Authenticator;
  /** Counters and GET /metrics; absent: no /metrics (docs/operations.md). */
  readonly metrics?: AgentMetrics | undefined;
  /** AGENT_METRICS_TOKEN: the operator's bearer for /metrics, besides capability tokens. */
  readonly metricsToken?: string | undefined;
  /** The client policy's variables for every user process but execute_code's; absent: none. */
  readonly sandboxEnv?: SandboxEnvironment | undefined;
}

/** A slice of the agent (files, exec, shells …): its routes, sockets, counters and shutdown. */
export interface AgentFeature {
  readonly name: string;
  readonly router?: Router;
  readonly wsRoutes?: readonly WsRoute[];
  /** Counters reported by /healthz, e.g. `{ shells: 2 }`. */
  readonly stats?: () => Readonly<Record<string, number>>;
  /** Its counters and what runs, for a token holder's /healthz (domain/metrics/usage-counters.ts). */
  readonly report?: () => FeatureReport;
  /** Stops everything the feature started (processes, shells, watchers). */
  readonly close?: () => Promise<void>;
}
