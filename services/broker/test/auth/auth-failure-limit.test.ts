// Failed credentials per client address (docs/security.md, "Hardening"): only failures are
// limited. Past AUTH_FAILURES_PER_MINUTE (default 20) failures, every wrong credential from
// the address answers the same 429 with Retry-After, whatever it is (unknown, revoked,
// malformed), so a guess tells nothing and is not logged; a valid credential from it is
// still checked and served, never blocked by someone else's guessing. The same rule holds
// for the actor_token of POST /oauth/token.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ErrorEnvelope } from '@sbx/protocol';
import { DEFAULT_AUTH_FAILURE_LIMITS } from '../../src/domain/rate-limit/auth-failure-limiter.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;
const LIMIT = DEFAULT_AUTH_FAILURE_LIMITS.maxFailures;

/** A well-formed key nobody was given. */
const guess = () => `sbk_guess_${randomUUID().replaceAll('-', '')}`;

describe(`failed credentials per address [${backend.name}]`, () => {
  // The default limit; X-Forwarded-For names the test's client addresses.
  const broker = useBroker(backend, {
    http: { trustProxy: true, corsAllowedOrigins: [], hstsMaxAgeSeconds: 0 },
  });
  let negotiated: { token: string };

  const list = (credential: string, from: string) =>
    request(broker.url).get('/v1/sandboxes').set(bearer(credential)).set('X-Forwarded-For', from);
  /** `LIMIT` wrong keys from `from`, each 401; the next one is the first 429. */
  async function exhaust(from: string): Promise<void> {
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++) statuses.push((await list(guess(), from)).status);
    expect(statuses).toEqual([...Array.from({ length: LIMIT }, () => 401), 429]);
  }
  /** What a refusal says, but for its request id. */
  const answerOf = (res: request.Response) => {
    const { request_id: _id, ...error } = ErrorEnvelope.parse(res.body).error;
    return { status: res.status, retryAfter: Number(res.headers['retry-after']), error };
  };

  beforeAll(async () => {
    const key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'] });
    const opened = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ scope: { type: 'thread', id: `thr_${randomUUID()}` }, mode: 'ensure' });
    if (opened.status !== 200) throw new Error(`negotiation answered ${opened.status}`);
    negotiated = opened.body as { token: string };
  });

  it(`serves a valid key from an address past ${LIMIT} failures; a wrong key from it still gets 429`, async () => {
    const from = '203.0.113.101';
    await exhaust(from);
    // Never verified before, so no cache of this broker can vouch for it: it is checked.
    const valid = await broker.apiKey({ scopes: ['read:sandbox'] });
    expect((await list(valid, from)).status).toBe(200);
    const wrong = await list(guess(), from);
    expect(answerOf(wrong)).toMatchObject({ status: 429, error: { code: 'RATE_LIMITED' } });
    expect(answerOf(wrong).retryAfter).toBeGreaterThan(0);
    expect((await list(valid, from)).status).toBe(200);
    // Other addresses are unaffected: a wrong key there is an ordinary 401.
    expect((await list(guess(), '198.51.100.101')).status).toBe(401);
    expect((await list(valid, '198.51.100.101')).status).toBe(200);
  });

  it('answers every wrong credential past the limit alike, and logs none of them', async () => {
    const from = '203.0.113.102';
    const valid = await broker.apiKey({ scopes: ['read:sandbox'] });
    const revoked = await broker.apiKey({ scopes: ['read:sandbox'] });
    const record = await broker.repositories.apiKeys.verify(revoked);
    await broker.repositories.apiKeys.revoke(record!.id, record!.tenantId);
    await exhaust(from);
    const logged = broker.logs.length;
    const wrong = [
      guess(),
      revoked,
      `${valid.slice(0, -4)}${valid.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`,
      'an-operator-style-key-nobody-holds-0123456789',
      'header.payload.signature',
    ];
    const answers = [];
    for (const credential of wrong) answers.push(answerOf(await list(credential, from)));
    const malformed = await request(broker.url)
      .get('/v1/sandboxes')
      .set('Authorization', 'Basic dXNlcjpwYXNz')
      .set('X-Forwarded-For', from);
    answers.push(answerOf(malformed));
    const [first] = answers;
    expect(first).toMatchObject({ status: 429, error: { code: 'RATE_LIMITED' } });
    // Retry-After counts down the same window: at most a second apart across these calls.
    for (const answer of answers) {
      expect({ ...answer, retryAfter: 0 }).toEqual({ ...first, retryAfter: 0 });
      expect(Math.abs(answer.retryAfter - first!.retryAfter)).toBeLessThanOrEqual(1);
    }
    expect(broker.logs.slice(logged).filter((line) => line.includes('refused'))).toEqual([]);
    expect((await list(valid, from)).status).toBe(200);
  });

  it('serves a valid actor_token of /oauth/token from an address past its limit; a wrong one gets 429', async () => {
    const from = '203.0.113.103';
    const exchange = (actor: string, at = from) =>
      request(broker.url).post('/oauth/token').set('X-Forwarded-For', at).type('form').send({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: negotiated.token,
        subject_token_type: 'urn:sbx:params:oauth:token-type:capability',
        actor_token: actor,
        actor_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      });
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++) statuses.push((await exchange(guess())).status);
    expect(statuses).toEqual([...Array.from({ length: LIMIT }, () => 400), 429]);
    const actor = await broker.apiKey({ scopes: ['read:sandbox'], principalType: 'agent' });
    expect((await exchange(actor)).status).toBe(200);
    const wrong = await exchange(guess());
    expect(answerOf(wrong)).toMatchObject({ status: 429, error: { code: 'RATE_LIMITED' } });
    // Actor failures and caller failures are one count per address: its API calls are limited too.
    expect((await list(guess(), from)).status).toBe(429);
    expect((await exchange(guess(), '198.51.100.103')).status).toBe(400);
  });
});
