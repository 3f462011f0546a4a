// GET /metrics on the agent, and the counting of refused credentials. The agent
// is reachable by sandbox clients, so its counters are never anonymous: a caller
// needs the operator's AGENT_METRICS_TOKEN or a capability token for this sandbox.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { AgentContext, AgentFeature } from '../agent-context.js';
import type { AgentMetrics } from '../domain/metrics/agent-metrics.js';
import { authenticate } from './capability.js';

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** The operator's token when it is the bearer; anything else goes to capability authentication. */
function operatorOrCapability(ctx: AgentContext): RequestHandler {
  const operator = ctx.metricsToken === undefined ? undefined : digest(ctx.metricsToken);
  const capability = authenticate(ctx.authenticator, ctx.metrics);
  return (req, res, next) => {
    const given = /^Bearer +(\S+)$/i.exec(req.get('authorization') ?? '')?.[1];
    if (operator !== undefined && given !== undefined && timingSafeEqual(digest(given), operator)) {
      next();
      return;
    }
    capability(req, res, next);
  };
}

export function metricsHandlers(
  ctx: AgentContext,
  metrics: AgentMetrics,
  features: readonly AgentFeature[],
): RequestHandler[] {
  return [
    operatorOrCapability(ctx),
    async (_req, res) => {
      const stats: Record<string, number> = {};
      for (const feature of features) Object.assign(stats, feature.stats?.() ?? {});
      const { contentType, body } = await metrics.render(stats);
      res.set('Cache-Control', 'no-store').type(contentType).send(body);
    },
  ];
}
