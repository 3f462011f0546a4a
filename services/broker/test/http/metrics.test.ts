// /metrics, /healthz and /readyz on a real broker: the request histogram by route
// template, tokens minted, sandboxes and sessions by state, readiness probes.
import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createLogger } from '@sbx/service-kit';
import { InProcessCoordination } from '../../src/adapters/redis/in-process-coordination.js';
import { brokerObservability } from '../../src/broker-observability.js';
import { createApp } from '../../src/http/app.js';
import { migrationsAppliedProbe } from '../../src/store/migration-status.js';
import { bearer } from '../support/broker-harness.js';
import { backends, describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const silent = createLogger({
  service: 'broker-test',
  level: 'silent',
  destination: new Writable({ write: (_c, _e, done) => done() }),
});

/** The value of one sample line of the exposition text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describeEachBackend('broker metrics and readiness', (backend) => {
  const broker = useBroker(backend);
  const scrape = async () => (await request(broker.url).get('/metrics').expect(200)).text;

  it('counts a negotiation under its route template, the token minted, sandboxes and sessions by state', async () => {
    const key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'] });
    const before = await scrape();
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({
        scope: { type: 'workspace', id: 'ws_metrics' },
        mode: 'ensure',
        actor: { type: 'human', id: 'usr_metrics' },
        requested_capabilities: ['fs_read'],
        provider_preference: 'auto',
      });
    expect(res.status).toBe(200);
    const sessionId = (res.body as { binding: { id: string } }).binding.id;
    await request(broker.url).get(`/v1/sandbox/sessions/${sessionId}`).set(bearer(key)).expect(200);

    const after = await scrape();
    const route = { method: 'POST', route: '/v1/sandbox/sessions', status: '200' };
    const count = 'sbx_broker_http_request_duration_seconds_count';
    expect(sample(after, count, route) - sample(before, count, route)).toBe(1);
    expect(sample(after, count, { method: 'GET', route: '/v1/sandbox/sessions/:session_id' })).toBe(1);
    expect(after).not.toContain(sessionId);
    const minted = 'sbx_broker_tokens_minted_total';
    expect(sample(after, minted) - sample(before, minted)).toBe(1);
    expect(sample(after, 'sbx_broker_sandboxes', { state: 'active' })).toBe(1);
    expect(sample(after, 'sbx_broker_sandboxes', { state: 'failed' })).toBe(0);
    expect(sample(after, 'sbx_broker_sessions', { state: 'held' })).toBe(1);
    expect(sample(after, 'sbx_broker_sandbox_provisioning_seconds_count', { outcome: 'ok' })).toBe(1);
  });

  it('counts refused credentials by code, and logs every request with its request id', async () => {
    const res = await request(broker.url)
      .get('/v1/sandbox/sessions/ssn_x')
      .set('Authorization', 'Bearer sbk_not_a_key')
      .set('X-Request-Id', 'req_metrics_401');
    expect(res.status).toBe(401);
    expect(res.headers['x-request-id']).toBe('req_metrics_401');
    expect(sample(await scrape(), 'sbx_broker_auth_rejections_total', { code: 'UNAUTHENTICATED' })).toBe(1);
    const lines = broker.logs.filter((l) => l.includes('"request_id":"req_metrics_401"'));
    expect(lines.find((l) => l.includes('"msg":"request"'))).toContain('"status":401');
    // Lines written by the code serving the request carry its id too, after a parsed body as well.
    expect(lines.some((l) => l.includes('caller authentication refused'))).toBe(true);
    await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set('Authorization', 'Bearer sbk_not_a_key')
      .set('X-Request-Id', 'req_metrics_body')
      .send({ scope: { type: 'workspace', id: 'ws_x' } })
      .expect(401);
    const refused = broker.logs.find(
      (l) => l.includes('caller authentication refused') && l.includes('req_metrics_body'),
    );
    expect(refused).toContain('"request_id":"req_metrics_body"');
  });

  it('counts requests refused by the rate limiter, by bucket', async () => {
    const limited = await broker.instance({ rateLimits: { perWindow: { negotiate: 1, session: 1 } } });
    const key = await limited.apiKey({ scopes: ['read:sandbox'] });
    const get = () => request(limited.url).get('/v1/sandbox/sessions/ssn_none').set(bearer(key));
    await get();
    expect((await get()).status).toBe(429);
    const text = (await request(limited.url).get('/metrics').expect(200)).text;
    expect(sample(text, 'sbx_broker_rate_limited_total', { bucket: 'session' })).toBe(1);
  });

  it('is alive on /healthz and ready on /readyz: database, coordination, migrations', async () => {
    const health = await request(broker.url).get('/healthz').expect(200);
    expect(health.body).toMatchObject({ status: 'ok' });
    const ready = await request(broker.url).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'ok',
      checks: { database: 'ok', coordination: 'ok', migrations: 'ok' },
    });
  });

  it('is not ready while coordination fails, and still alive', async () => {
    const coordination = new InProcessCoordination({ keyPrefix: 'sbx-metrics-test' });
    const other = await broker.instance({ coordination });
    coordination.get = () => Promise.reject(new Error('ECONNREFUSED'));
    const ready = await request(other.url).get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toEqual({ database: 'ok', coordination: 'unavailable', migrations: 'ok' });
    await request(other.url).get('/healthz').expect(200);
  });

  it('is not ready while a shipped migration is not applied', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sbx-migrations-'));
    mkdirSync(path.join(dir, '29990101000000_not_applied'));
    await expect(migrationsAppliedProbe(broker.database.prisma, dir)()).rejects.toThrow(
      /29990101000000_not_applied/,
    );
  });
});

describe('broker readiness and /metrics access', () => {
  const backend = backends.find((b) => b.name === 'pglite') ?? backends[0]!;

  it('answers 503 on /readyz once the database is closed; /metrics honours METRICS_TOKEN', async () => {
    const database = await backend.open();
    const coordination = new InProcessCoordination({ keyPrefix: 'sbx-metrics-test' });
    const { metrics, probes } = brokerObservability({ database, coordination, logger: silent });
    const app = createApp({
      logger: silent,
      version: '0.0.0',
      startedAt: 0,
      now: () => 0,
      probes,
      metrics,
      metricsToken: 'metrics-token-0123456789',
    });
    await request(app).get('/readyz').expect(200);
    await request(app).get('/metrics').expect(401);
    await request(app).get('/metrics').set('Authorization', 'Bearer wrong-token-0123456789').expect(401);
    const ok = await request(app).get('/metrics').set('Authorization', 'Bearer metrics-token-0123456789');
    expect(ok.status).toBe(200);
    expect(ok.headers['content-type']).toMatch(/^text\/plain/);
    await database.close();
    const down = await request(app).get('/readyz');
    expect(down.status).toBe(503);
    expect(down.body.checks).toMatchObject({ database: 'unavailable', coordination: 'ok' });
    await request(app).get('/healthz').expect(200);
    await coordination.close();
  }, 120_000);
});
