import type { RequestHandler } from 'express';
import type { AgentContext, AgentFeature } from '../agent-context.js';
import { mergeReports, newBootId } from '../domain/metrics/usage-counters.js';
import { AGENT_VERSION } from '../version.js';
import { authenticate, findCapability } from './capability.js';

/**
 * Authenticates only a request that presents credentials: without an Authorization
 * header it passes as anonymous, with one it must verify (401 otherwise), so a bad
 * token is refused rather than quietly answered as if none had been sent.
 */
function optionalBearer(ctx: AgentContext): RequestHandler {
  const bearer = authenticate(ctx.authenticator, ctx.metrics);
  return (req, res, next) => {
    if (req.get('authorization') === undefined) {
      next();
      return;
    }
    bearer(req, res, next);
  };
}

function fullHealth(
  ctx: AgentContext,
  features: readonly AgentFeature[],
  startedAt: number,
  bootId: string,
): Record<string, unknown> {
  const counts: Record<string, number> = {};
  for (const feature of features) Object.assign(counts, feature.stats?.() ?? {});
  const report = mergeReports(
    bootId,
    features.flatMap((feature) => (feature.report === undefined ? [] : [feature.report()])),
  );
  return {
    status: 'ok',
    sandbox_id: ctx.sandboxId,
    version: AGENT_VERSION,
    uptime_seconds: Math.floor((ctx.now() - startedAt) / 1000),
    launcher: ctx.launcher.kind,
    shells: counts['shells'] ?? 0,
    processes: counts['processes'] ?? 0,
    ...counts,
    ...report,
  };
}

/**
 * `GET /healthz`. Anyone may learn that the agent is alive; only a holder of a token
 * for this sandbox (any capability) learns which sandbox it is, its version and what
 * runs in it (`boot_id`, `usage`, `activity`: usage-counters.ts), so whoever can reach
 * the port cannot map agents to sandboxes.
 */
export function healthzHandlers(
  ctx: AgentContext,
  features: readonly AgentFeature[],
  startedAt: number,
): RequestHandler[] {
  // The features' counters start with them, once per agent process: so does the boot id.
  const bootId = newBootId();
  return [
    optionalBearer(ctx),
    (_req, res) => {
      // The body depends on the credentials: no cache may hand one caller's answer to another.
      res.vary('Authorization');
      res.set('Cache-Control', 'no-store');
      if (findCapability(res) === undefined) res.json({ status: 'ok' });
      else res.json(fullHealth(ctx, features, startedAt, bootId));
    },
  ];
}
