// The broker's HTTP hardening (docs/security.md, "Hardening"): security headers,
// the CORS allowlist, failed-authentication limits per client address, body
// limits, and no stack trace in any answer.
import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createLogger } from '@sbx/service-kit';
import { createApp } from '../../src/http/app.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.name === 'pglite') ?? backends[0]!;
const ALLOWED = 'https://console.example.com';

describe('broker hardening', () => {
  const broker = useBroker(backend, {
    authFailures: { maxFailures: 3, windowMs: 60_000 },
    http: { corsAllowedOrigins: [ALLOWED], hstsMaxAgeSeconds: 31_536_000, trustProxy: true },
  });
  const session = (key: string, from: string) =>
    request(broker.url).get('/v1/sandbox/sessions/ses_x').set(bearer(key)).set('X-Forwarded-For', from);

  it('sends the security headers on every answer, and no X-Powered-By', async () => {
    for (const res of [
      await request(broker.url).get('/healthz'),
      await request(broker.url).get('/v1/sandbox/sessions/ses_x'),
    ]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('answers CORS for allowlisted origins only, preflight included', async () => {
    const allowed = await request(broker.url).get('/healthz').set('Origin', ALLOWED);
    expect(allowed.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(allowed.headers['vary']).toContain('Origin');
    const preflight = await request(broker.url)
      .options('/v1/sandbox/sessions')
      .set('Origin', ALLOWED)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization, content-type');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-methods']).toContain('POST');
    expect(preflight.headers['access-control-allow-headers']).toContain('Authorization');
    for (const origin of ['https://evil.example.com', 'null', 'https://console.example.com.evil.io']) {
      const refused = await request(broker.url)
        .options('/v1/sandbox/sessions')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'POST');
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      expect(refused.status).not.toBe(204);
    }
    const none = await request(broker.url).get('/healthz');
    expect(none.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses an address past its failed API-key attempts with 429, logged once per burst', async () => {
    const good = await broker.apiKey({ scopes: ['read:sandbox'] });
    const guesses = Array.from({ length: 12 }, (_, i) => `sbk_guess${i}_${'x'.repeat(30)}`);
    const statuses: number[] = [];
    for (const guess of guesses) statuses.push((await session(guess, '203.0.113.7')).status);
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses.slice(3).every((status) => status === 429)).toBe(true);
    const blocked = await session(`sbk_guess_last_${'x'.repeat(30)}`, '203.0.113.7');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.body.error).toMatchObject({ code: 'RATE_LIMITED' });
    // Only failures are limited: a valid key from the address is served, as from another.
    expect((await session(good, '203.0.113.7')).status).toBe(404);
    expect((await session(good, '198.51.100.9')).status).toBe(404);

    const bursts = broker.logs.filter((line) => line.includes('failed authentication attempts over'));
    expect(bursts).toHaveLength(1);
    expect(bursts[0]).toContain('203.0.113.7');
    const logs = broker.logs.join('');
    for (const key of [...guesses, good]) expect(logs).not.toContain(key);
  });

  it('keeps serving valid keys, recently verified or not, from an address that is guessing', async () => {
    const known = await broker.apiKey({ scopes: ['read:sandbox'] });
    const unused = await broker.apiKey({ scopes: ['read:sandbox'] });
    const from = '203.0.113.21';
    expect((await session(known, from)).status).toBe(404);
    for (let i = 0; i < 4; i++) await session(`sbk_guess_known_${i}_${'y'.repeat(30)}`, from);
    expect((await session(`sbk_guess_more_${'y'.repeat(30)}`, from)).status).toBe(429);
    expect((await session(known, from)).status).toBe(404);
    // Never verified before: checked, and served.
    expect((await session(unused, from)).status).toBe(404);
    expect((await session(`sbk_guess_after_${'y'.repeat(30)}`, from)).status).toBe(429);
  });

  it('counts refused actor credentials of /oauth/token against the address too', async () => {
    const key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'] });
    const negotiated = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ scope: { type: 'thread', id: 'thr_hardening' }, mode: 'ensure' });
    expect(negotiated.status).toBe(200);
    const exchange = (actor: string) =>
      request(broker.url).post('/oauth/token').set('X-Forwarded-For', '203.0.113.50').type('form').send({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: negotiated.body.token,
        subject_token_type: 'urn:sbx:params:oauth:token-type:capability',
        actor_token: actor,
        actor_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await exchange(`sbk_actor_guess_${i}_${'z'.repeat(30)}`)).status);
    expect(statuses).toEqual([400, 400, 400, 429, 429]);
    // A valid actor from the address is served; only failures are limited.
    expect((await exchange(key)).status).toBe(200);
  });

  it('ignores X-Forwarded-For unless trust proxy is configured', async () => {
    const direct = await broker.instance({ authFailures: { maxFailures: 1, windowMs: 60_000 } });
    const guess = (from: string) =>
      request(direct.url)
        .get('/v1/sandbox/sessions/ses_x')
        .set(bearer('sbk_nope'))
        .set('X-Forwarded-For', from);
    expect((await guess('192.0.2.1')).status).toBe(401);
    // A different forwarded address does not reset the count: the socket's address is what counts.
    expect((await guess('192.0.2.2')).status).toBe(429);
  });

  it('refuses a body over its limit with 413', async () => {
    const key = await broker.apiKey({ scopes: ['write:sandbox'] });
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ pad: 'x'.repeat(300 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });
});

describe('broker errors', () => {
  it('answers a thrown non-SbxError as INTERNAL without a stack or the message', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const router = express.Router();
    router.get('/boom', () => {
      throw new TypeError('secret detail at /srv/app/boom.ts:12');
    });
    const app = createApp({
      logger: createLogger({ service: 'broker-test', level: 'info', destination: sink }),
      version: '1.0.0',
      startedAt: 0,
      now: () => 0,
      probes: [],
      routers: [router],
    });
    const res = await request(app).get('/boom');
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: 'INTERNAL' });
    expect(res.text).not.toContain('secret detail');
    expect(res.text).not.toMatch(/\bat .+:\d+/);
    expect(res.text).not.toContain('TypeError');
    // The operator still gets the cause.
    expect(lines.join('')).toContain('secret detail');
  });
});
