// The broker asking a running agent about itself: its authenticated `/healthz` carries
// its counters since it started and what runs in it (services/agent/src/domain/metrics/usage-counters.ts).
import { z } from 'zod';
import { AgentProcess, AgentShell, AgentUsage } from '@sbx/protocol';
import { getAgentJson } from './agent-get.js';
import type { AgentReport, Dataplane } from './provider.js';

/** How long the broker waits for an agent's answer; a silent agent reports nothing. */
export const INSPECT_TIMEOUT_MS = 2000;

const HealthReport = z.object({
  sandbox_id: z.string(),
  boot_id: z.string().min(1).max(100),
  usage: AgentUsage,
  activity: z.object({ processes: z.array(AgentProcess), shells: z.array(AgentShell) }),
});

/** What the provider knows of a live agent: where it listens and how to sign its probe token. */
export interface InspectableAgent {
  readonly dataplane: Dataplane | undefined;
  readonly bearer: (() => string) | undefined;
}

/**
 * The agent's report, or undefined: no live agent, not started yet, no answer within
 * `timeoutMs`, an error status, another sandbox's agent or a body that is not a report.
 */
export async function inspectAgent(
  sandboxId: string,
  live: InspectableAgent | undefined,
  timeoutMs = INSPECT_TIMEOUT_MS,
): Promise<AgentReport | undefined> {
  if (live?.dataplane === undefined || live.bearer === undefined) return undefined;
  const authorization = `Bearer ${live.bearer()}`;
  try {
    const answer = await getAgentJson(`${live.dataplane.httpBaseUrl}/healthz`, { authorization }, timeoutMs);
    if (answer.status !== 200) return undefined;
    const parsed = HealthReport.safeParse(answer.body);
    if (!parsed.success || parsed.data.sandbox_id !== sandboxId) return undefined;
    const { boot_id, usage, activity } = parsed.data;
    return { bootId: boot_id, usage, processes: activity.processes, shells: activity.shells };
  } catch {
    return undefined;
  }
}
