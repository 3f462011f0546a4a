import express, { type Express, type Router } from 'express';
import { buildOpenApiDocument } from '@sbx/protocol';
import {
  assignRequestId,
  corsAllowlist,
  errorHandler,
  JSON_BODY_LIMIT_BYTES,
  notFound,
  refuseOptions,
  requestContext,
  securityHeaders,
  type Logger,
} from '@sbx/service-kit';
import type { BrokerHttpHardening } from '../config.js';
import {
  metricsHandler,
  observeRequests,
  readinessHandler,
  type HealthProbe,
  type HttpMetrics,
} from './observability.js';

export type { HealthProbe, HttpMetrics } from './observability.js';

export interface BrokerAppDeps {
  readonly logger: Logger;
  readonly version: string;
  readonly startedAt: number;
  readonly now: () => number;
  /** What /readyz checks (database, coordination, migrations); /healthz checks nothing. */
  readonly probes: readonly HealthProbe[];
  /** Request histogram and `GET /metrics`; absent: neither. */
  readonly metrics?: HttpMetrics | undefined;
  /** METRICS_TOKEN: when set, /metrics answers only `Authorization: Bearer <token>`. */
  readonly metricsToken?: string | undefined;
  /** The API's route families (sessions, threads …), mounted in order after /healthz. */
  readonly routers?: readonly Router[];
  /** CORS allowlist, HSTS, trust proxy; absent: none, none, off. */
  readonly http?: BrokerHttpHardening | undefined;
  /** Paths whose request bodies are relayed as they come: no JSON parser reads them. */
  readonly rawBodyPaths?: RegExp | undefined;
}

/** The broker's HTTP surface, built from its dependencies only (no globals, no environment). */
export function createApp(deps: BrokerAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.set('trust proxy', deps.http?.trustProxy ?? false);
  app.use(assignRequestId);
  app.use(observeRequests(deps.logger, deps.metrics));
  app.use(securityHeaders({ hstsMaxAgeSeconds: deps.http?.hstsMaxAgeSeconds }));
  app.use(corsAllowlist({ allowedOrigins: deps.http?.corsAllowedOrigins ?? [] }));
  app.use(refuseOptions);
  const json = express.json({ limit: JSON_BODY_LIMIT_BYTES });
  // Relayed bodies (a file upload, a data-plane call) stream to the agent untouched.
  const raw = deps.rawBodyPaths;
  app.use((req, res, next) => {
    if (raw?.test(req.path) === true) next();
    else json(req, res, next);
  });
  app.use(requestContext);

  // Liveness: answers while the process serves; dependencies are /readyz's business.
  app.get('/healthz', (_req, res) => {
    res.set('Cache-Control', 'no-store').json({
      status: 'ok',
      version: deps.version,
      uptime_seconds: Math.floor((deps.now() - deps.startedAt) / 1000),
    });
  });
  app.get('/readyz', readinessHandler(deps.probes));
  if (deps.metrics !== undefined) app.get('/metrics', metricsHandler(deps.metrics, deps.metricsToken));

  // Generated from the schemas the routes validate with; public, like the API's shape.
  const openApi = buildOpenApiDocument({ version: deps.version });
  app.get('/v1/openapi.json', (_req, res) => {
    res.json(openApi);
  });

  for (const router of deps.routers ?? []) app.use(router);
  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
