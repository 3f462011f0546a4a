import { z } from 'zod';
import { AgentProcess, AgentShell, AgentUsage } from './admin.js';

/**
 * The agent's `GET /healthz` (services/agent/src/http/healthz.ts): an anonymous caller
 * learns only that the agent is alive; a holder of a token of this sandbox (any scope)
 * gets the report the broker reads for usage accounting and the admin detail.
 */
export const AgentLiveness = z.object({ status: z.literal('ok') });
export type AgentLiveness = z.infer<typeof AgentLiveness>;

const Count = z.number().int().nonnegative();

/** Counters are per feature (`file_watches` only with the files feature); more may be added. */
export const AgentHealthReport = z.object({
  status: z.literal('ok'),
  sandbox_id: z.string(),
  version: z.string(),
  uptime_seconds: Count,
  /** How user programs start: `direct` or `bubblewrap` (confined). */
  launcher: z.string(),
  shells: Count,
  processes: Count,
  file_watches: Count.optional(),
  /** A random id per agent process: counters of another boot id restarted from 0. */
  boot_id: z.string(),
  usage: AgentUsage,
  activity: z.object({ processes: z.array(AgentProcess), shells: z.array(AgentShell) }),
});
export type AgentHealthReport = z.infer<typeof AgentHealthReport>;

/** The full report when the request carried a valid token, the liveness body otherwise. */
export const AgentHealth = z.union([AgentHealthReport, AgentLiveness]);
export type AgentHealth = z.infer<typeof AgentHealth>;
