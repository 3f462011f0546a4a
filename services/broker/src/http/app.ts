import express, { type Express, type Router } from 'express';
import { buildOpenApiDocument } from '@sbx/protocol';
import { assignRequestId, errorHandler, notFound, type Logger } from '@sbx/service-kit';

/** A named dependency the health endpoint probes (database, coordination, …). */
export interface HealthProbe {
  readonly name: string;
  readonly check: () => Promise<void>;
}

export interface BrokerAppDeps {
  readonly logger: Logger;
  readonly version: string;
  readonly startedAt: number;
  readonly now: () => number;
  readonly probes: readonly HealthProbe[];
  /** The API's route families (sessions, threads …), mounted in order after /healthz. */
  readonly routers?: readonly Router[];
}

async function probe(p: HealthProbe): Promise<[string, string]> {
  try {
    await p.check();
    return [p.name, 'ok'];
  } catch {
    return [p.name, 'unavailable'];
  }
}

/** The broker's HTTP surface, built from its dependencies only (no globals, no environment). */
export function createApp(deps: BrokerAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(assignRequestId);
  app.use(express.json({ limit: '256kb' }));

  app.get('/healthz', async (_req, res) => {
    const checks = Object.fromEntries(await Promise.all(deps.probes.map(probe)));
    const healthy = Object.values(checks).every((state) => state === 'ok');
    res.status(healthy ? 200 : 503).json({
      status: healthy ? 'ok' : 'degraded',
      version: deps.version,
      uptime_seconds: Math.floor((deps.now() - deps.startedAt) / 1000),
      checks,
    });
  });

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
