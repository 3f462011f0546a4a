import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createLogger } from '@sbx/service-kit';
import { Writable } from 'node:stream';
import { ERROR_TABLE, ErrorEnvelope, ROUTES, type RouteSpec } from '@sbx/protocol';
import { createApp, type HealthProbe } from '../../src/http/app.js';

function appWith(probes: HealthProbe[], logLines: string[] = []) {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  let now = 10_000;
  return createApp({
    logger: createLogger({ service: 'broker-test', level: 'info', destination: sink }),
    version: '9.9.9',
    startedAt: 0,
    now: () => (now += 1000),
    probes,
  });
}

describe('broker HTTP surface', () => {
  it('reports liveness with version and uptime on /healthz, readiness with each probe on /readyz', async () => {
    const app = appWith([{ name: 'database', check: async () => {} }]);
    const res = await request(app).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', version: '9.9.9', uptime_seconds: 11 });
    const ready = await request(app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok', checks: { database: 'ok' } });
  });

  it('answers 503 on /readyz when a dependency is down, and stays alive on /healthz', async () => {
    const down: HealthProbe = {
      name: 'redis',
      check: () => Promise.reject(new Error('ECONNREFUSED')),
    };
    const res = await request(appWith([down])).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'unavailable', checks: { redis: 'unavailable' } });
    expect((await request(appWith([down])).get('/healthz')).status).toBe(200);
  });

  it('answers unknown routes with the error envelope and the request id', async () => {
    const res = await request(appWith([])).get('/nope').set('X-Request-Id', 'req_abc');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: {
        code: 'NOT_FOUND',
        message: 'no route for GET /nope',
        retryable: false,
        request_id: 'req_abc',
      },
    });
  });

  it('answers malformed JSON with BAD_REQUEST and no stack trace', async () => {
    const res = await request(appWith([]))
      .post('/v1/sandbox/sessions')
      .set('Content-Type', 'application/json')
      .send('{"thread_id": ');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.request_id).toMatch(/^req_/);
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+/);
  });

  it('refuses an oversized body with PAYLOAD_TOO_LARGE', async () => {
    const res = await request(appWith([]))
      .post('/v1/sandbox/sessions')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ thread_id: 'x'.repeat(300 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('replaces a malformed caller request id with its own', async () => {
    const res = await request(appWith([])).get('/healthz').set('X-Request-Id', 'bad id\twith tab');
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
  });

  it('serves an OpenAPI 3.1 document of every route, its errors, and the error envelope', async () => {
    const res = await request(appWith([])).get('/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body as {
      openapi: string;
      info: { version: string };
      paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: unknown }>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('9.9.9');
    for (const route of Object.values(ROUTES) as RouteSpec[]) {
      const op = doc.paths[route.path]?.[route.method.toLowerCase()];
      expect([route.path, op === undefined]).toEqual([route.path, false]);
      const statuses = Object.keys(op?.responses ?? {});
      for (const code of route.errors) expect(statuses).toContain(String(ERROR_TABLE[code].status));
      const success =
        route.produces !== undefined
          ? '200'
          : route.response === undefined
            ? '204'
            : String(route.status ?? 200);
      expect(statuses).toContain(success);
      expect([route.path, op?.requestBody !== undefined]).toEqual([route.path, route.body !== undefined]);
    }
    // What the broker answers on an error has the documented shape.
    const missing = await request(appWith([])).get('/no-such-route');
    expect(ErrorEnvelope.safeParse(missing.body).success).toBe(true);
    expect(doc.components.schemas['ErrorEnvelope']).toMatchObject({ type: 'object', required: ['error'] });
  });
});
