import express, { type Express, type RequestHandler } from 'express';
import { SbxError } from '@sbx/protocol';
import {
  assignRequestId,
  corsAllowlist,
  errorHandler,
  notFound,
  refuseOptions,
  securityHeaders,
} from '@sbx/service-kit';
import type { AgentContext, AgentFeature } from '../agent-context.js';
import { authenticate } from './capability.js';
import { healthzHandlers } from './healthz.js';
import { infoHandler } from './info.js';
import { metricsHandlers } from './metrics-route.js';
import { requestLog } from './request-log.js';

/** The only routes a signed file URL may address; everything else needs a bearer token. */
function isSignableRoute(path: string): boolean {
  return path.startsWith('/files/') || path === '/v1/files/download' || path === '/v1/files/upload';
}

/**
 * Requests to a file route carrying a signed-URL signature are authorized by the
 * files feature from `sig`/`exp`; every other request needs a bearer token.
 */
function authenticateUnlessSigned(ctx: AgentContext): RequestHandler {
  const bearer = authenticate(ctx.authenticator, ctx.metrics);
  return (req, res, next) => {
    if (req.query['sig'] === undefined) {
      bearer(req, res, next);
      return;
    }
    if (!isSignableRoute(req.path)) {
      throw new SbxError('UNAUTHENTICATED', 'signed URLs are accepted only to download or upload a file');
    }
    next();
  };
}

/** Browser origins allowed CORS, and HSTS (docs/security.md, "Hardening"). */
export interface AgentHttpHardening {
  readonly allowedOrigins: readonly string[];
  readonly hstsMaxAgeSeconds?: number | undefined;
}

export function createAgentApp(
  ctx: AgentContext,
  features: readonly AgentFeature[],
  startedAt: number,
  hardening: AgentHttpHardening = { allowedOrigins: [] },
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(assignRequestId);
  app.use(securityHeaders({ hstsMaxAgeSeconds: hardening.hstsMaxAgeSeconds }));
  // Before authentication: a preflight carries no credentials.
  app.use(corsAllowlist({ allowedOrigins: hardening.allowedOrigins }));
  app.use(refuseOptions);
  app.use(requestLog(ctx.logger, ctx.now, ctx.metrics));

  // Before bearer authentication: an anonymous caller gets liveness only (see healthz.ts).
  app.get('/healthz', ...healthzHandlers(ctx, features, startedAt));
  // Never anonymous: the operator's token or a capability token for this sandbox (metrics-route.ts).
  if (ctx.metrics !== undefined) app.get('/metrics', ...metricsHandlers(ctx, ctx.metrics, features));

  app.use(authenticateUnlessSigned(ctx));
  app.get('/v1/info', infoHandler(ctx));
  for (const feature of features) if (feature.router !== undefined) app.use(feature.router);
  app.use(notFound);
  app.use(errorHandler(ctx.logger));
  return app;
}
