// What the broker tells its operators over HTTP: one log line per request (with
// its request id and route template), the request histogram, `GET /metrics`
// (behind METRICS_TOKEN when one is set) and the readiness probes of /readyz.
import { createHash, timingSafeEqual } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Request, RequestHandler } from 'express';
import { SbxError } from '@sbx/protocol';
import { requestIdOf, type Logger } from '@sbx/service-kit';

/** What the app needs of the metrics adapter (adapters/metrics). */
export interface HttpMetrics {
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  render(): Promise<{ readonly contentType: string; readonly body: string }>;
}

/**
 * A named dependency /readyz probes (database, coordination, migrations …). `check`
 * resolves `'degraded'` for a dependency that is down while the broker serves without it
 * (Redis: docs/operations.md "Without Redis"), and rejects for one it cannot serve without.
 */
export interface HealthProbe {
  readonly name: string;
  readonly check: () => Promise<void | 'degraded'>;
}

/**
 * The route template a request matched (`/v1/sandbox/sessions/:id`), or `unmatched`:
 * raw paths would give the histogram one series per id.
 */
export function routeTemplateOf(req: Request): string {
  const route: unknown = req.route;
  if (typeof route === 'object' && route !== null && 'path' in route && typeof route.path === 'string')
    return `${req.baseUrl}${route.path}`;
  return 'unmatched';
}

export function observeRequests(logger: Logger, metrics?: HttpMetrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.on('finish', () => {
      const route = routeTemplateOf(req);
      const ms = Math.round((performance.now() - started) * 1000) / 1000;
      metrics?.observeRequest(req.method, route, res.statusCode, ms / 1000);
      logger.info(
        {
          request_id: requestIdOf(res),
          method: req.method,
          route,
          status: res.statusCode,
          duration_ms: ms,
        },
        'request',
      );
    });
    next();
  };
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** `GET /metrics`: open when `token` is undefined, else only to `Authorization: Bearer <token>`. */
export function metricsHandler(metrics: HttpMetrics, token: string | undefined): RequestHandler {
  const expected = token === undefined ? undefined : digest(token);
  return async (req, res) => {
    if (expected !== undefined) {
      const given = /^Bearer +(\S+)$/i.exec(req.get('authorization') ?? '')?.[1];
      if (given === undefined || !timingSafeEqual(digest(given), expected))
        throw new SbxError('UNAUTHENTICATED', '/metrics needs Authorization: Bearer <METRICS_TOKEN>');
    }
    const { contentType, body } = await metrics.render();
    res.set('Cache-Control', 'no-store').type(contentType).send(body);
  };
}

async function probe(p: HealthProbe): Promise<[string, string]> {
  try {
    return [p.name, (await p.check()) ?? 'ok'];
  } catch {
    return [p.name, 'unavailable'];
  }
}

/**
 * `GET /readyz`: 200 when every probe passes (`status: "degraded"` when one serves degraded),
 * 503 naming the ones that fail.
 */
export function readinessHandler(probes: readonly HealthProbe[]): RequestHandler {
  return async (_req, res) => {
    const checks = Object.fromEntries(await Promise.all(probes.map(probe)));
    const states = Object.values(checks);
    const ready = states.every((state) => state !== 'unavailable');
    const status = !ready ? 'unavailable' : states.every((state) => state === 'ok') ? 'ok' : 'degraded';
    res
      .status(ready ? 200 : 503)
      .set('Cache-Control', 'no-store')
      .json({ status, checks });
  };
}
